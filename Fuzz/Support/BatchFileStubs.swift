// Compiled into the batch-file target only, in place of Sources/Fastpull/CommandLine/CommandOptions.swift:
// BatchFile needs nothing from that file but `CommandOptions.url(from:)`, and the file itself depends on
// most of the library (configuration, batch items, proxies, credentials, netrc). Keep the function in step
// with CommandOptions.swift; FuzzRegressionTests replays the batch-file corpus through the real one.

import Foundation

/// Stand-in for the library's `CommandOptions`, holding only what `BatchFile` uses.
enum CommandOptions {
    /// A URL as the command line accepts it: http or https, with a host (as in CommandOptions.swift).
    static func url(from text: String) throws(UsageError) -> URL {
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased() else {
            throw UsageError(message: "error: '\(text)' is not a valid URL (expected http://… or https://…)")
        }
        guard scheme == "http" || scheme == "https" else {
            throw UsageError(
                message: "error: unsupported scheme '\(scheme)' in '\(text)' (use http or https)")
        }
        guard let host = url.host(), !host.isEmpty else {
            throw UsageError(message: "error: '\(text)' is not a valid URL (expected http://… or https://…)")
        }
        return url
    }
}
