import Foundation

/// A user name and password for HTTP Basic authentication (an origin's `Authorization`, a proxy's
/// `Proxy-Authorization`).
public struct BasicCredentials: Sendable, Hashable {
    /// The user name.
    public var user: String
    /// The password.
    public var password: String

    /// Credentials `user`:`password`.
    public init(user: String, password: String) {
        self.user = user
        self.password = password
    }

    /// `user:password`, as `-u` and URLs take it.
    public var userInfo: String { "\(user):\(password)" }

    /// `Basic <base64(user:password)>`, the header value a client sends.
    public var headerValue: String { "Basic " + Data(userInfo.utf8).base64EncodedString() }

    /// One `user:$apr1$...` line for an htpasswd file (squid's `basic_ncsa_auth`, nginx's
    /// `auth_basic_user_file`), hashed by `openssl passwd -apr1` run in `folder`.
    func htpasswdLine(in folder: String) async throws -> String {
        let output = folder + "/openssl-passwd.out"
        let errors = folder + "/openssl-passwd.err"
        defer {
            unlink(output)
            unlink(errors)
        }
        let process = try ServerProcess(
            executable: "openssl", arguments: ["passwd", "-apr1", password], standardOutput: output,
            standardError: errors)
        guard let exit = await process.exited(within: .seconds(10)) else {
            await process.stop()
            throw RealServerError("openssl passwd did not finish within 10 s")
        }
        let hash = ServerFolder.tail(of: output).trimmingCharacters(in: .whitespacesAndNewlines)
        guard exit.code == 0, hash.hasPrefix("$apr1$") else {
            throw RealServerError(
                "openssl passwd -apr1 failed (\(exit))", serverOutput: ServerFolder.tail(of: errors))
        }
        return "\(user):\(hash)\n"
    }
}
