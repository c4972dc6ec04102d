import FastpullHTTP
import FoundationEssentials

extension RequestSettings {
    /// The settings of `configuration` for a download of `url`. Fails with a usage error naming the
    /// field (never its value) for a reserved or malformed field, a `User-Agent` or user name that
    /// cannot be sent.
    init(configuration: Configuration, url: URL) throws(FastpullError) {
        var fields: [(name: String, value: String)] = []
        for header in configuration.request.headers {
            let name = header.name.trimmingSpaces()
            guard HTTPHeaders.isToken(name) else {
                throw FastpullError(
                    .usage,
                    "invalid header name '\(Self.shown(name))': a name holds only letters, digits and !#$%&'*+-.^_`|~"
                )
            }
            if let reserved = Self.reservedNames.first(where: { HTTPHeaders.namesEqual($0, name) }) {
                throw FastpullError(
                    .usage,
                    "the header '\(reserved)' cannot be set: Fastpull sets it itself to frame each request and connection"
                )
            }
            let value = String(HTTPHeaders.trimmingWhitespace(Substring(header.value)))
            guard value.isEmpty || HTTPHeaders.isValidFieldValue(value) else {
                throw FastpullError(
                    .usage,
                    "the value of the header '\(name)' contains a line break or another control character")
            }
            fields.append((name, value))
        }
        var userAgent: String? = Requests.userAgent
        if let custom = configuration.request.userAgent {
            let value = String(HTTPHeaders.trimmingWhitespace(Substring(custom)))
            guard value.isEmpty || HTTPHeaders.isValidFieldValue(value) else {
                throw FastpullError(
                    .usage, "the User-Agent contains a line break or another control character")
            }
            userAgent = value.isEmpty ? nil : value
        }
        var authorization: String? = nil
        if let credentials = configuration.request.credentials {
            guard !credentials.user.contains(":") else {
                throw FastpullError(.usage, "the user name for HTTP Basic authentication cannot contain ':'")
            }
            guard !Self.hasControlCharacter(credentials.user + credentials.password) else {
                throw FastpullError(
                    .usage,
                    "the user name or password for HTTP Basic authentication contains a control character")
            }
            authorization = Requests.basicAuthorization(
                user: credentials.user, password: credentials.password)
        }
        self.init(
            userAgent: userAgent, fields: fields, authorization: authorization, trustedOrigin: Origin(url))
    }
}
