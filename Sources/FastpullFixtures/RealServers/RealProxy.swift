/// A real forward proxy (squid, tinyproxy) on 127.0.0.1 that demands Basic proxy authentication.
public protocol RealProxy: RealServer {
    /// The credentials the proxy accepts in `Proxy-Authorization`.
    var credentials: BasicCredentials { get }
}

extension RealProxy {
    /// `http://user:password@127.0.0.1:<port>` (or without credentials), for a client's `--proxy`.
    public func proxyURL(withCredentials: Bool = true, port: Int? = nil) -> String {
        let userInfo = withCredentials ? credentials.userInfo + "@" : ""
        return "http://\(userInfo)127.0.0.1:\(port ?? self.port)"
    }
}
