import Testing

@testable import FastpullManager

/// The WebSocket codec against RFC 6455's own examples, and the frames it must refuse.
struct WebSocketFrameTests {
    @Test func acceptValueIsTheRFCsExample() {
        // RFC 6455 §1.3.
        #expect(
            WebSocketFrame.acceptValue(forKey: "dGhlIHNhbXBsZSBub25jZQ==") == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=")
    }

    @Test func aMaskedTextFrameIsUnmasked() throws {
        // RFC 6455 §5.7: a single-frame masked text message, "Hello", then one byte of the next.
        var buffer: [UInt8] = [0x81, 0x85, 0x37, 0xFA, 0x21, 0x3D, 0x7F, 0x9F, 0x4D, 0x51, 0x58, 0x89]
        let frame = try #require(try WebSocketFrame.take(from: &buffer, largest: 1 << 20))
        #expect(frame == WebSocketFrame(final: true, opcode: .text, payload: Array("Hello".utf8)))
        #expect(buffer == [0x89], "only the frame is taken")
    }

    @Test func partOfAFrameWaitsForTheRest() throws {
        let whole = Self.masked(opcode: 0x1, Array(repeating: 0x61, count: 300))
        for cut in [1, 2, 3, 4, 7, 8, 100, whole.count - 1] {
            var buffer = Array(whole.prefix(cut))
            #expect(try WebSocketFrame.take(from: &buffer, largest: 1 << 20) == nil, "cut at \(cut)")
            #expect(buffer.count == cut, "nothing taken at \(cut)")
        }
        var buffer = whole
        let frame = try #require(try WebSocketFrame.take(from: &buffer, largest: 1 << 20))
        #expect(frame.payload.count == 300)
        #expect(buffer.isEmpty)
    }

    @Test func framesAClientMustNotSendAreRefused() {
        var unmasked: [UInt8] = [0x81, 0x02, 0x68, 0x69]
        #expect(throws: WebSocketFrame.Refused.self) {
            try WebSocketFrame.take(from: &unmasked, largest: 100)
        }
        var longPing = Self.masked(opcode: 0x9, Array(repeating: 0, count: 126))
        #expect(throws: WebSocketFrame.Refused.self) {
            try WebSocketFrame.take(from: &longPing, largest: 1000)
        }
        var fragmentedClose = Self.masked(opcode: 0x8, [3, 232], final: false)
        #expect(throws: WebSocketFrame.Refused.self) {
            try WebSocketFrame.take(from: &fragmentedClose, largest: 1000)
        }
        var reserved = Self.masked(opcode: 0x1 | 0x40, [0x61])
        #expect(throws: WebSocketFrame.Refused.self) {
            try WebSocketFrame.take(from: &reserved, largest: 1000)
        }
        var unknown = Self.masked(opcode: 0x3, [0x61])
        #expect(throws: WebSocketFrame.Refused.self) {
            try WebSocketFrame.take(from: &unknown, largest: 1000)
        }
        var big = Self.masked(opcode: 0x1, Array(repeating: 0x61, count: 70_000))
        do {
            _ = try WebSocketFrame.take(from: &big, largest: 65_536)
            Issue.record("a frame over the limit was taken")
        } catch {
            #expect(error.code == 1009)
        }
    }

    @Test func aServerFrameUsesTheShortestLength() {
        for (count, header) in [
            (0, [0x81, 0]), (125, [0x81, 125]), (126, [0x81, 126, 0, 126]), (65_535, [0x81, 126, 255, 255]),
        ] {
            let encoded = WebSocketFrame(
                final: true, opcode: .text, payload: Array(repeating: 0x61, count: count)
            ).encoded
            #expect(Array(encoded.prefix(header.count)) == header.map(UInt8.init), "\(count) bytes")
            #expect(encoded.count == header.count + count)
        }
        let large = WebSocketFrame(final: true, opcode: .binary, payload: Array(repeating: 0, count: 65_536))
            .encoded
        #expect(Array(large.prefix(10)) == [0x82, 127, 0, 0, 0, 0, 0, 1, 0, 0])
        #expect(WebSocketFrame.close(1000, "bye").encoded == [0x88, 5, 0x03, 0xE8] + Array("bye".utf8))
    }

    @Test func notificationsAreAria2s() {
        #expect(NotificationHub.method(for: .start, to: .active) == "aria2.onDownloadStart")
        #expect(NotificationHub.method(for: .pause, to: .paused) == "aria2.onDownloadPause")
        #expect(NotificationHub.method(for: .remove, to: .removed) == "aria2.onDownloadStop")
        #expect(NotificationHub.method(for: .finish, to: .complete) == "aria2.onDownloadComplete")
        #expect(NotificationHub.method(for: .fail, to: .error) == "aria2.onDownloadError")
        // aria2 says nothing when an item only goes back in line.
        #expect(NotificationHub.method(for: .unpause, to: .waiting) == nil)
        #expect(NotificationHub.method(for: .interrupt, to: .waiting) == nil)
    }

    /// A client's frame: masked with a fixed key.
    static func masked(opcode: UInt8, _ payload: [UInt8], final: Bool = true) -> [UInt8] {
        let mask: [UInt8] = [1, 2, 3, 4]
        var bytes: [UInt8] = [(final ? 0x80 : 0) | opcode]
        switch payload.count {
        case ..<126: bytes.append(0x80 | UInt8(payload.count))
        case ..<65536: bytes += [0x80 | 126, UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)]
        default:
            bytes.append(0x80 | 127)
            for shift in stride(from: 56, through: 0, by: -8) {
                bytes.append(UInt8((payload.count >> shift) & 0xFF))
            }
        }
        return bytes + mask + payload.enumerated().map { $0.element ^ mask[$0.offset & 3] }
    }
}
