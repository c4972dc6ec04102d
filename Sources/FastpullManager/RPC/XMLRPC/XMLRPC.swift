import FastpullEngine
import FoundationEssentials

/// XML-RPC (the specification at xmlrpc.com, as aria2 answers it on `/rpc`): a `methodCall` read into
/// a method name and ``JSONValue`` parameters, so the same ``Aria2RPC`` answers both; a result or a
/// fault written back as a `methodResponse`. Integers come as `int`/`i4`/`i8`, texts as `string` (or a
/// bare `value`), `boolean`, `double`, `base64` (kept as its text), `array`, `struct` and `nil`.
enum XMLRPC {
    /// A call: the method and its parameters.
    static func call(_ body: [UInt8]) throws(XMLElement.Malformed) -> (method: String, params: [JSONValue]) {
        let root = try XMLElement.parse(body)
        guard root.name == "methodCall", let name = root.child("methodName")?.text, !name.isEmpty else {
            throw XMLElement.Malformed(reason: "a methodCall with a methodName expected")
        }
        var params: [JSONValue] = []
        for param in root.child("params")?.children ?? [] where param.name == "param" {
            guard let value = param.child("value") else {
                throw XMLElement.Malformed(reason: "a param without a value")
            }
            params.append(try self.value(value))
        }
        return (name.trimmed, params)
    }

    /// A `<value>` element's value.
    static func value(_ element: XMLElement) throws(XMLElement.Malformed) -> JSONValue {
        guard let typed = element.children.first else { return .string(element.text) }
        switch typed.name {
        case "string", "base64": return .string(typed.text)
        case "int", "i4", "i8":
            guard let number = Int64(typed.text.trimmed) else {
                throw XMLElement.Malformed(reason: "'\(typed.text)' is not an integer")
            }
            return .integer(number)
        case "boolean":
            switch typed.text.trimmed {
            case "1": return .bool(true)
            case "0": return .bool(false)
            default: throw XMLElement.Malformed(reason: "'\(typed.text)' is not a boolean")
            }
        case "double":
            guard let number = Double(typed.text.trimmed) else {
                throw XMLElement.Malformed(reason: "'\(typed.text)' is not a double")
            }
            return .number(number)
        case "nil": return .null
        case "array":
            var values: [JSONValue] = []
            for item in typed.child("data")?.children ?? [] where item.name == "value" {
                values.append(try value(item))
            }
            return .array(values)
        case "struct":
            var fields: [(String, JSONValue)] = []
            for member in typed.children where member.name == "member" {
                guard let name = member.child("name")?.text, let item = member.child("value") else {
                    throw XMLElement.Malformed(reason: "a struct member needs a name and a value")
                }
                fields.append((name, try value(item)))
            }
            return .object(fields)
        case "dateTime.iso8601": return .string(typed.text)
        default: throw XMLElement.Malformed(reason: "unknown type <\(typed.name)>")
        }
    }

    /// The answer carrying `result`.
    static func response(_ result: JSONValue) -> [UInt8] {
        Array(
            (#"<?xml version="1.0"?>"# + "\n<methodResponse><params><param>" + encode(result)
                + "</param></params></methodResponse>\n").utf8)
    }

    /// The answer for a failed call: aria2's code and message as `faultCode` and `faultString`.
    static func fault(code: Int64, message: String) -> [UInt8] {
        let detail = JSONValue.object([("faultCode", .integer(code)), ("faultString", .string(message))])
        return Array(
            (#"<?xml version="1.0"?>"# + "\n<methodResponse><fault>" + encode(detail)
                + "</fault></methodResponse>\n").utf8)
    }

    /// A value as `<value>…</value>`.
    static func encode(_ value: JSONValue) -> String {
        let inner: String
        switch value {
        case .null: inner = "<nil/>"
        case .bool(let flag): inner = "<boolean>\(flag ? 1 : 0)</boolean>"
        case .integer(let number): inner = "<int>\(number)</int>"
        case .number(let number): inner = "<double>\(number)</double>"
        case .string(let text): inner = "<string>\(text.xmlEscaped)</string>"
        case .array(let values): inner = "<array><data>" + values.map(encode).joined() + "</data></array>"
        case .object(let fields):
            inner =
                "<struct>"
                + fields.map { "<member><name>\($0.0.xmlEscaped)</name>\(encode($0.1))</member>" }.joined()
                + "</struct>"
        }
        return "<value>\(inner)</value>"
    }
}

extension String {
    fileprivate var trimmed: String {
        String(drop { $0.isWhitespace }.reversed().drop { $0.isWhitespace }.reversed())
    }
}
