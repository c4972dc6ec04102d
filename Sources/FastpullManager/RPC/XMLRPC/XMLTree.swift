import FastpullEngine

/// An XML document as a tree of elements, read by the engine's strict `XMLReader` (no document type
/// declarations, so no entity expansion; UTF-8 only): enough for XML-RPC, whose values are elements
/// and text.
struct XMLElement: Equatable {
    var name: String
    var children: [XMLElement] = []
    /// The element's own text (its children's left out).
    var text = ""

    /// The first child named `name`.
    func child(_ name: String) -> XMLElement? { children.first { $0.name == name } }

    /// Why a document could not be read.
    struct Malformed: Error, Equatable {
        var reason: String
    }

    /// How deep elements may nest.
    static let deepest = 64

    /// The document's root element.
    static func parse(_ bytes: [UInt8]) throws(Malformed) -> XMLElement {
        var open: [XMLElement] = []
        var root: XMLElement?
        var tooDeep = false
        do {
            try XMLReader.read(bytes) { event in
                switch event {
                case .start(let name, _, _):
                    guard open.count < deepest else {
                        tooDeep = true
                        return false
                    }
                    open.append(XMLElement(name: name))
                case .text(let text):
                    if !open.isEmpty { open[open.count - 1].text += text }
                case .end:
                    let element = open.removeLast()
                    if open.isEmpty {
                        root = element
                    } else {
                        open[open.count - 1].children.append(element)
                    }
                }
                return true
            }
        } catch {
            throw Malformed(reason: "line \(error.line): \(error.reason)")
        }
        guard !tooDeep else { throw Malformed(reason: "elements nested deeper than \(deepest)") }
        guard let root else { throw Malformed(reason: "no root element") }
        return root
    }
}

extension String {
    /// The text with `&`, `<` and `>` escaped for an XML element's content.
    var xmlEscaped: String {
        var escaped = ""
        escaped.reserveCapacity(utf8.count)
        for character in self {
            switch character {
            case "&": escaped += "&amp;"
            case "<": escaped += "&lt;"
            case ">": escaped += "&gt;"
            default: escaped.append(character)
            }
        }
        return escaped
    }
}
