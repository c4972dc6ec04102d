import Foundation

/// Random file contents for the downloads, from a seeded generator so a failure can be reproduced and
/// every test's bytes differ from every other's.
enum TestContent {
    /// 1 MiB.
    static let mebibyte = 1 << 20

    /// `count` pseudo-random bytes (SplitMix64 from `seed`), made on a thread of their own: 64 MiB
    /// take a CPU-second in a debug build on a busy machine, which Swift's pool must not pay.
    static func random(_ count: Int, seed: UInt64) async -> Data {
        await OffPool.run { randomNow(count, seed: seed) }
    }

    private static func randomNow(_ count: Int, seed: UInt64) -> Data {
        var state = seed &+ 0x9E37_79B9_7F4A_7C15
        var data = Data(count: count)
        data.withUnsafeMutableBytes { buffer in
            let words = count / 8
            let wordPointer = buffer.baseAddress!.assumingMemoryBound(to: UInt64.self)
            for index in 0..<words { wordPointer[index] = next(&state) }
            var last = next(&state)
            for index in (words * 8)..<count {
                buffer[index] = UInt8(truncatingIfNeeded: last)
                last >>= 8
            }
        }
        return data
    }

    /// A seed that differs for every call site and argument.
    static func seed(_ parts: String...) -> UInt64 {
        var hash: UInt64 = 0xCBF2_9CE4_8422_2325
        for byte in parts.joined(separator: "/").utf8 {
            hash = (hash ^ UInt64(byte)) &* 0x100_0000_01B3
        }
        return hash
    }

    /// "64 MiB", "1 MiB + 1", "0 B".
    static func describe(_ size: Int) -> String {
        if size >= mebibyte, size % mebibyte == 0 { return "\(size / mebibyte) MiB" }
        if size > mebibyte { return "\(size / mebibyte) MiB + \(size % mebibyte)" }
        return "\(size) B"
    }

    private static func next(_ state: inout UInt64) -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var mixed = state
        mixed = (mixed ^ (mixed >> 30)) &* 0xBF58_476D_1CE4_E5B9
        mixed = (mixed ^ (mixed >> 27)) &* 0x94D0_49BB_1331_11EB
        return mixed ^ (mixed >> 31)
    }
}
