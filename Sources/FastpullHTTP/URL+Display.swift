import FastpullNet
import FoundationEssentials

extension URL {
    /// The URL as messages show it: a password in it, and the values of query parameters that carry a
    /// signature, a token or a secret (a presigned S3 URL's `X-Amz-Signature`, an Azure `sig`, an
    /// `access_token`), replaced by `REDACTED`. Everything else stays as it was, so the user still sees
    /// which URL it was; what would let anyone else fetch it does not reach a terminal, a log or a CI
    /// transcript.
    package var redactedForDisplay: String {
        // Without a password or a query there is nothing to redact (the common case, and the cheap one).
        guard password(percentEncoded: true) != nil || query(percentEncoded: true) != nil else {
            return absoluteString
        }
        guard var components = URLComponents(url: self, resolvingAgainstBaseURL: false) else {
            return absoluteString
        }
        var changed = false
        if components.percentEncodedPassword != nil {
            components.percentEncodedPassword = "REDACTED"
            changed = true
        }
        if let items = components.percentEncodedQueryItems {
            components.percentEncodedQueryItems = items.map { item in
                guard item.value != nil, Self.isSecretParameter(item.name) else { return item }
                changed = true
                return URLQueryItem(name: item.name, value: "REDACTED")
            }
        }
        guard changed else { return absoluteString }
        return components.string ?? absoluteString
    }

    /// Whether a query parameter of this name carries something that grants access.
    package static func isSecretParameter(_ name: String) -> Bool {
        let lowered = (name.percentDecoded ?? name).lowercased()
        // The account a signature belongs to goes with it (SigV2's `AWSAccessKeyId`, as SigV4's
        // `X-Amz-Credential`).
        if ["sig", "key", "apikey", "api_key", "auth", "code", "awsaccesskeyid"].contains(lowered) {
            return true
        }
        return ["signature", "token", "secret", "password", "passwd", "credential"].contains {
            lowered.contains($0)
        }
    }
}
