import FastpullEngine
import FoundationEssentials

/// A JSON value read from a request: any JSON, decoded into the engine's ``JSONValue`` (object keys
/// in no particular order).
struct JSONInput: Decodable {
    let value: JSONValue

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            value = .null
        } else if let bool = try? container.decode(Bool.self) {
            value = .bool(bool)
        } else if let integer = try? container.decode(Int64.self) {
            value = .integer(integer)
        } else if let number = try? container.decode(Double.self) {
            value = .number(number)
        } else if let string = try? container.decode(String.self) {
            value = .string(string)
        } else if let array = try? container.decode([JSONInput].self) {
            value = .array(array.map(\.value))
        } else {
            let object = try container.decode([String: JSONInput].self)
            value = .object(object.sorted { $0.key < $1.key }.map { ($0.key, $0.value.value) })
        }
    }

    /// Parses `bytes`; nil when they are not JSON.
    static func parse(_ bytes: [UInt8]) -> JSONValue? {
        try? JSONDecoder().decode(JSONInput.self, from: Data(bytes)).value
    }
}

extension JSONValue {
    /// The string, if this is one.
    package var string: String? { if case .string(let value) = self { value } else { nil } }
    /// The number as an integer, if this is an integer (or a string of one, as aria2's clients send).
    package var integer: Int64? {
        switch self {
        case .integer(let value): value
        case .string(let text): Int64(text)
        default: nil
        }
    }
    /// The elements, if this is an array.
    package var array: [JSONValue]? { if case .array(let values) = self { values } else { nil } }
    /// The value of `key`, if this is an object that has it.
    package subscript(key: String) -> JSONValue? {
        if case .object(let fields) = self { fields.first { $0.0 == key }?.1 } else { nil }
    }
}
