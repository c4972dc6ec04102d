import COpenSSL
import FoundationEssentials

/// One WebSocket frame (RFC 6455 §5.2): how a message, a ping or a close travels on the connection.
/// A client's frames are masked and a server's are not (§5.1); a message may come in fragments
/// (§5.4), which ``WebSocketConnection`` joins.
struct WebSocketFrame: Equatable {
    /// What the frame carries (§5.2, §11.8).
    enum Opcode: UInt8 {
        case continuation = 0x0
        case text = 0x1
        case binary = 0x2
        case close = 0x8
        case ping = 0x9
        case pong = 0xA

        /// Close, ping and pong: never fragmented, at most 125 bytes (§5.5).
        var isControl: Bool { rawValue & 0x8 != 0 }
    }

    /// Why a frame was refused: the connection is closed with this status code (§7.4.1).
    struct Refused: Error, Equatable {
        /// 1002 protocol error, 1009 too big, 1007 not UTF-8.
        var code: UInt16
        var reason: String
    }

    var final: Bool
    var opcode: Opcode
    var payload: [UInt8]

    /// The GUID a server appends to the client's key before hashing it (§1.3).
    private static let handshakeGUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

    /// `Sec-WebSocket-Accept` for a client's `Sec-WebSocket-Key`: base64 of SHA-1 of the key and the
    /// GUID (§4.2.2).
    static func acceptValue(forKey key: String) -> String {
        let input = Array((key + handshakeGUID).utf8)
        var digest = [UInt8](repeating: 0, count: 20)
        _ = input.withUnsafeBufferPointer { SHA1($0.baseAddress, $0.count, &digest) }
        return Data(digest).base64EncodedString()
    }

    /// Takes the first whole frame off `buffer`; nil while it holds only part of one. A client's frame
    /// must be masked, a control frame short and final, and no frame longer than `largest` bytes.
    static func take(from buffer: inout [UInt8], largest: Int) throws(Refused) -> WebSocketFrame? {
        guard buffer.count >= 2 else { return nil }
        let first = buffer[0]
        let second = buffer[1]
        guard first & 0x70 == 0 else { throw Refused(code: 1002, reason: "reserved bits set") }
        guard let opcode = Opcode(rawValue: first & 0x0F) else {
            throw Refused(code: 1002, reason: "unknown opcode \(first & 0x0F)")
        }
        guard second & 0x80 != 0 else { throw Refused(code: 1002, reason: "a client's frame must be masked") }
        var length = UInt64(second & 0x7F)
        var offset = 2
        if length == 126 {
            guard buffer.count >= 4 else { return nil }
            length = UInt64(buffer[2]) << 8 | UInt64(buffer[3])
            offset = 4
        } else if length == 127 {
            guard buffer.count >= 10 else { return nil }
            length = buffer[2..<10].reduce(0) { $0 << 8 | UInt64($1) }
            offset = 10
        }
        let final = first & 0x80 != 0
        if opcode.isControl, length > 125 || !final {
            throw Refused(code: 1002, reason: "a control frame must be final and at most 125 bytes")
        }
        guard length <= UInt64(largest) else { throw Refused(code: 1009, reason: "message too big") }
        let size = Int(length)
        guard buffer.count >= offset + 4 + size else { return nil }
        let mask = Array(buffer[offset..<offset + 4])
        let start = offset + 4
        var payload = Array(buffer[start..<start + size])
        for index in payload.indices { payload[index] ^= mask[index & 3] }
        buffer.removeFirst(start + size)
        return WebSocketFrame(final: final, opcode: opcode, payload: payload)
    }

    /// The frame as a server sends it: unmasked, with the shortest length encoding.
    var encoded: [UInt8] {
        var bytes: [UInt8] = [(final ? 0x80 : 0) | opcode.rawValue]
        switch payload.count {
        case ..<126: bytes.append(UInt8(payload.count))
        case ..<65536: bytes += [126, UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)]
        default:
            bytes.append(127)
            for shift in stride(from: 56, through: 0, by: -8) {
                bytes.append(UInt8((payload.count >> shift) & 0xFF))
            }
        }
        return bytes + payload
    }

    /// A close frame with `code` and `reason` (§5.5.1).
    static func close(_ code: UInt16, _ reason: String = "") -> WebSocketFrame {
        WebSocketFrame(
            final: true, opcode: .close,
            payload: [UInt8(code >> 8), UInt8(code & 0xFF)] + Array(reason.utf8.prefix(120)))
    }
}
