import FastpullNet
import Glibc
import Synchronization

/// The kernel's word that the network changed: a netlink socket (`NETLINK_ROUTE`) joined to the link,
/// address and route groups, read on a thread of its own. Each message (a link up or down, an address
/// added or removed, a route changed) calls `onChange`, so items waiting for the network try again at
/// once instead of at their next back-off.
final class NetworkWatcher: Sendable {
    private let fd: Int32
    private let stopped = Atomic<Bool>(false)

    /// The netlink groups read: links, IPv4 and IPv6 addresses and routes (`RTMGRP_LINK`,
    /// `RTMGRP_IPV4_IFADDR`, `RTMGRP_IPV4_ROUTE`, `RTMGRP_IPV6_IFADDR`, `RTMGRP_IPV6_ROUTE`).
    private static let groups: UInt32 = 0x1 | 0x10 | 0x40 | 0x100 | 0x400

    /// Starts watching; nil where netlink is not available (the back-off alone then decides).
    init?(onChange: @escaping @Sendable () -> Void) {
        // Protocol 0: NETLINK_ROUTE.
        let fd = socket(AF_NETLINK, Int32(SOCK_RAW.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return nil }
        var address = NetlinkAddress(family: UInt16(AF_NETLINK), pad: 0, pid: 0, groups: Self.groups)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<NetlinkAddress>.size))
            }
        }
        guard bound == 0 else {
            close(fd)
            return nil
        }
        // Wakes now and then to see whether it was stopped.
        var timeout = timeval(tv_sec: 1, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        self.fd = fd
        OSThread.detach { [self] in
            var buffer = [UInt8](repeating: 0, count: 16 << 10)
            while !stopped.load(ordering: .relaxed) {
                let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
                if count > 0 {
                    onChange()
                } else if count < 0, errno != EAGAIN, errno != EWOULDBLOCK, errno != EINTR, errno != ENOBUFS {
                    return
                }
            }
        }
    }

    /// Stops watching (within a second).
    func stop() { stopped.store(true, ordering: .relaxed) }

    deinit { close(fd) }
}

/// `struct sockaddr_nl` (linux/netlink.h), which Swift's Glibc module does not declare.
private struct NetlinkAddress {
    var family: UInt16
    var pad: UInt16
    var pid: UInt32
    var groups: UInt32
}
