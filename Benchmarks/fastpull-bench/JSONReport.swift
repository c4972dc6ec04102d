import Foundation

/// Writes `results.json`.
enum JSONReport {
    static func render(_ report: BenchReport) throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        return try encoder.encode(report)
    }
}
