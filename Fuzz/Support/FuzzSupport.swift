// Shared by every fuzz target: compiled into each fuzzer binary next to the target's entry file.

/// Stops the fuzzer with a message when an invariant of the code under test does not hold. Unlike
/// `assert`, it is active in optimised builds; libFuzzer records the input that triggered it.
func require(_ condition: @autoclosure () -> Bool, _ message: @autoclosure () -> String) {
    if !condition() {
        fatalError("fuzz invariant violated: \(message())")
    }
}

/// A small deterministic generator (splitmix64), seeded from the input, for choosing how to split it.
struct SplitMix {
    private var state: UInt64

    init(seed: UInt64) {
        state = seed
    }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var value = state
        value = (value ^ (value >> 30)) &* 0xBF58_476D_1CE4_E5B9
        value = (value ^ (value >> 27)) &* 0x94D0_49BB_1331_11EB
        return value ^ (value >> 31)
    }

    /// A value in `1...limit`.
    mutating func length(upTo limit: Int) -> Int {
        Int(next() % UInt64(max(limit, 1))) + 1
    }
}

/// The ways a target feeds its input to an incremental parser: all at once, byte by byte, and in
/// pseudo-random pieces. An incremental parser must give the same result for every split.
enum Split: CaseIterable {
    case whole
    case bytes
    case random

    /// The lengths of consecutive pieces covering `count` bytes.
    func pieces(count: Int, seed: UInt64) -> [Int] {
        switch self {
        case .whole:
            return count == 0 ? [] : [count]
        case .bytes:
            return Array(repeating: 1, count: count)
        case .random:
            var generator = SplitMix(seed: seed)
            var result: [Int] = []
            var left = count
            while left > 0 {
                let piece = min(left, generator.length(upTo: 64))
                result.append(piece)
                left -= piece
            }
            return result
        }
    }
}

/// The input as a buffer (libFuzzer may pass a null pointer for an empty input).
func fuzzInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> UnsafeRawBufferPointer {
    guard let data, size > 0 else { return UnsafeRawBufferPointer(start: nil, count: 0) }
    return UnsafeRawBufferPointer(start: data, count: size)
}
