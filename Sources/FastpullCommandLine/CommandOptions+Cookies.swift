import Fastpull
import FoundationEssentials

/// Cookies: `-b`/`--cookie` (a Netscape cookie file, or `NAME=VALUE`), `--cookie-jar`, `--no-cookies`.
extension CommandOptions {
    /// Gives the run one cookie jar (unless `--no-cookies`), loaded from the `--cookie` files; a
    /// `NAME=VALUE` goes, as a `Cookie` field, to the origin of the URL asked for only.
    mutating func readCookieOptions(_ parsed: ParsedArguments) throws(UsageError) {
        if parsed.has("no-cookies") {
            for option in ["cookie", "cookie-jar"] where parsed.has(option) {
                throw UsageError(message: "error: --no-cookies and --\(option) cannot be used together")
            }
            return
        }
        let jar = CookieJar()
        var literal: [String] = []
        for value in parsed.all("cookie") {
            guard let data = FileManager.default.contents(atPath: value) else {
                guard value.contains("="), !value.contains("/") else {
                    throw UsageError(
                        message: "error: --cookie: cannot read '\(value)' (nor is it NAME=VALUE)")
                }
                literal.append(value)
                continue
            }
            let bad = jar.load(netscape: String(decoding: data, as: UTF8.self))
            if let line = bad.first {
                throw UsageError(
                    message:
                        "error: --cookie: \(value) line \(line) is not a Netscape cookie line (DOMAIN, TRUE|FALSE, PATH, TRUE|FALSE, EXPIRES, NAME, VALUE, tab-separated)"
                )
            }
        }
        if !literal.isEmpty {
            configuration.request.headers.append(
                Header(name: "Cookie", value: literal.joined(separator: "; ")))
        }
        if let path = parsed.last("cookie-jar") {
            guard !path.isEmpty else {
                throw UsageError(option: "cookie-jar", "expected a file path", got: path)
            }
            cookieJarFile = path
        }
        configuration.request.cookies = jar
    }

    /// Writes the run's cookies to `--cookie-jar`, readable by the user alone; the error's text when
    /// that fails.
    package func saveCookies() -> String? {
        guard let path = cookieJarFile, let jar = configuration.request.cookies else { return nil }
        let text = jar.netscape
        let created = FileManager.default.createFile(
            atPath: path, contents: Data(text.utf8), attributes: [.posixPermissions: 0o600])
        return created ? nil : "error: --cookie-jar: cannot write '\(path)'"
    }
}
