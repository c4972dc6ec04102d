import FoundationEssentials

/// A JSON value whose object keys keep their order, so every line `fastpull --json` prints has its
/// fields in a stable order.
package indirect enum JSONValue: Sendable, Equatable {
    case null
    case bool(Bool)
    case integer(Int64)
    /// A number written with at most three decimals; NaN and infinities are written as `null`.
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object([(String, JSONValue)])

    /// The compact JSON text, on one line.
    package var text: String {
        var output = ""
        write(to: &output)
        return output
    }

    package static func == (lhs: JSONValue, rhs: JSONValue) -> Bool { lhs.text == rhs.text }

    private func write(to output: inout String) {
        switch self {
        case .null: output += "null"
        case .bool(let value): output += value ? "true" : "false"
        case .integer(let value): output += String(value)
        case .number(let value):
            guard value.isFinite else {
                output += "null"
                return
            }
            var text = ByteFormat.printf("%.3f", value)
            while text.hasSuffix("0") { text.removeLast() }
            if text.hasSuffix(".") { text.removeLast() }
            output += text == "-0" ? "0" : text
        case .string(let value): Self.quote(value, into: &output)
        case .array(let values):
            output += "["
            for (index, value) in values.enumerated() {
                if index > 0 { output += "," }
                value.write(to: &output)
            }
            output += "]"
        case .object(let fields):
            output += "{"
            for (index, (key, value)) in fields.enumerated() {
                if index > 0 { output += "," }
                Self.quote(key, into: &output)
                output += ":"
                value.write(to: &output)
            }
            output += "}"
        }
    }

    /// Appends `text` as a JSON string literal (quotes, escapes, control characters as `\uXXXX`).
    static func quote(_ text: String, into output: inout String) {
        output += "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": output += "\\\""
            case "\\": output += "\\\\"
            case "\n": output += "\\n"
            case "\r": output += "\\r"
            case "\t": output += "\\t"
            default:
                if scalar.value < 0x20 || scalar.value == 0x7F {
                    output += ByteFormat.printf("\\u%04x", scalar.value)
                } else {
                    output.unicodeScalars.append(scalar)
                }
            }
        }
        output += "\""
    }
}
