import FastpullFixtures
import Foundation

@testable import FastpullHTTP

/// nginx, lighttpd, apache2 or h2o serving a document root of its own.
struct FileServerHost: OriginHost {
    let origin: Origin
    let server: any RealServer
    let documentRoot: String

    /// Starts `origin`'s server for a new document root.
    static func start(_ origin: Origin) async throws -> FileServerHost {
        let root = try ServerFolder.create("docroot-\(origin.rawValue)", permissions: 0o755)
        do {
            let server: any RealServer
            switch origin {
            case .nginx: server = try await NginxServer.start(documentRoot: root)
            case .lighttpd: server = try await LighttpdServer.start(documentRoot: root)
            case .apache2: server = try await ApacheServer.start(documentRoot: root)
            case .apache2NoETag:
                server = try await ApacheServer.start(documentRoot: root, options: .init(etags: false))
            case .h2o: server = try await H2OServer.start(documentRoot: root)
            case .s3: preconditionFailure("S3 is served by S3Host")
            }
            return FileServerHost(origin: origin, server: server, documentRoot: root)
        } catch {
            ServerFolder.remove(root)
            throw error
        }
    }

    func publish(_ name: String, _ data: Data, modified: Date) async throws -> String {
        let path = documentRoot + "/" + name
        try await OffPool.run { [self] in
            try write(data, to: path)
            try FileManager.default.setAttributes([.modificationDate: modified], ofItemAtPath: path)
        }
        return server.baseURL + "/" + name
    }

    func replace(_ name: String, with data: Data) async throws {
        try await OffPool.run { [self] in try write(data, to: documentRoot + "/" + name) }
    }

    func stop() async {
        await server.stop()
        ServerFolder.remove(documentRoot)
    }

    /// Writes to a temporary name in the same folder and renames it into place: servers that already
    /// opened the old file keep reading the old bytes; new opens see the new ones.
    private func write(_ data: Data, to path: String) throws {
        let temporary = documentRoot + "/.incoming-" + UUID().uuidString
        try data.write(to: URL(fileURLWithPath: temporary))
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: temporary)
        guard rename(temporary, path) == 0 else {
            throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: path])
        }
    }
}
