/// The deterministic content the fixture server generates under `/gen/<size>?seed=N`.
///
/// Byte `i` of the content for `seed` is byte `i % 8` (little-endian) of `splitmix64(seed &+ UInt64(i / 8))`,
/// where `splitmix64(x)` is one step of the SplitMix64 generator from state `x`: add the golden gamma
/// `0x9E3779B97F4A7C15`, then apply the variant-13 finaliser. The content does not depend on the size, so
/// a file of size `n` is the first `n` bytes of the infinite stream for its seed, and any range of it can
/// be produced without producing what comes before.
public enum FixtureContent {
    /// Fills `buffer` with the content bytes `offset ..< offset + buffer.count` for `seed`.
    ///
    /// Works at any offset and for any buffer alignment; the middle of the buffer is written one 64-bit
    /// word at a time.
    public static func fill(_ buffer: UnsafeMutableRawBufferPointer, offset: Int64, seed: UInt64) {
        precondition(offset >= 0, "FixtureContent offsets are never negative")
        guard let base = buffer.baseAddress, !buffer.isEmpty else { return }
        let count = buffer.count
        var position = 0
        var wordIndex = UInt64(offset / 8)
        let skip = Int(offset % 8)
        if skip != 0 {
            let taken = min(8 - skip, count)
            storePartial(word(wordIndex, seed: seed), from: skip, count: taken, to: base)
            position = taken
            wordIndex &+= 1
        }
        while count - position >= 8 {
            base.storeBytes(
                of: word(wordIndex, seed: seed).littleEndian, toByteOffset: position, as: UInt64.self)
            position &+= 8
            wordIndex &+= 1
        }
        if position < count {
            storePartial(word(wordIndex, seed: seed), from: 0, count: count - position, to: base + position)
        }
    }

    /// Returns the first `count` content bytes for `seed` (the whole body of `/gen/<count>?seed=<seed>`).
    public static func bytes(count: Int, seed: UInt64) -> [UInt8] {
        precondition(count >= 0, "count must not be negative")
        return [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            fill(UnsafeMutableRawBufferPointer(buffer), offset: 0, seed: seed)
            initialized = count
        }
    }

    /// One SplitMix64 step from state `state`: the value the generator returns after advancing to
    /// `state &+ 0x9E3779B97F4A7C15`.
    @inline(__always)
    static func splitmix64(_ state: UInt64) -> UInt64 {
        var z = state &+ 0x9E37_79B9_7F4A_7C15
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    @inline(__always)
    private static func word(_ index: UInt64, seed: UInt64) -> UInt64 {
        splitmix64(seed &+ index)
    }

    /// Stores bytes `from ..< from + count` of `word` (little-endian byte order) at `destination`.
    @inline(__always)
    private static func storePartial(
        _ word: UInt64, from: Int, count: Int, to destination: UnsafeMutableRawPointer
    ) {
        for index in 0..<count {
            destination.storeBytes(
                of: UInt8(truncatingIfNeeded: word >> UInt64((from + index) * 8)),
                toByteOffset: index, as: UInt8.self)
        }
    }
}
