import FastpullFixtures
import Foundation

@testable import FastpullHTTP

/// moto's S3 server with one bucket; files are objects, downloaded through presigned GET URLs.
struct S3Host: OriginHost {
    let origin = Origin.s3
    let moto: MotoS3Server
    let bucket = "interop"

    var server: any RealServer { moto }

    /// Starts moto and creates the bucket.
    static func start() async throws -> S3Host {
        let moto = try await MotoS3Server.start()
        do {
            try await moto.client.createBucket("interop")
            return S3Host(moto: moto)
        } catch {
            await moto.stop()
            throw error
        }
    }

    func publish(_ name: String, _ data: Data, modified: Date) async throws -> String {
        try await moto.client.putObject(bucket: bucket, key: name, data: data)
        return moto.client.presignedGetURL(bucket: bucket, key: name)
    }

    /// `name` through a new relay in front of moto, which records the requests as they were sent and
    /// counts the connections and the bytes moto served (its log has none of these): the presigned URL
    /// for the relay's port, and the relay, to stop when done.
    func throughRelay(_ name: String) throws -> (url: String, relay: RecordingRelay) {
        let relay = try RecordingRelay(upstreamPort: moto.port)
        var client = moto.client
        client.port = relay.port
        return (client.presignedGetURL(bucket: bucket, key: name), relay)
    }

    func replace(_ name: String, with data: Data) async throws {
        try await moto.client.putObject(bucket: bucket, key: name, data: data)
    }

    func stop() async {
        await moto.stop()
    }
}
