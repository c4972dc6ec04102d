/// Where the bytes of a download go as connections receive them: the `.part` file, written at every
/// byte's offset, or an output that takes bytes only in order (``OrderedOutput``, ``SequentialOutput``).
package protocol ByteDestination: AnyObject, Sendable {
    /// Stores `bytes`, the file's bytes from `offset` on.
    func write(_ bytes: UnsafeRawBufferPointer, at offset: Int64) throws
    /// Forgets everything written, for a stream that starts again from byte 0; fails where that is
    /// impossible (bytes already handed to a reader).
    func restart() throws
    /// The file to splice received bytes straight into, when the destination is one.
    var spliceTarget: OutputFile? { get }
}

extension OutputFile: ByteDestination {
    package func restart() throws { try truncate(to: 0) }

    package var spliceTarget: OutputFile? { self }
}
