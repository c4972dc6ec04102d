// swift-tools-version: 6.0
import PackageDescription

// Linux only: the engine writes with pwrite, splice and copy_file_range, places files with renameat2,
// and reads statfs and /proc. Elsewhere the manifest says so rather than failing in a C shim.
#if !os(Linux)
    #error("Fastpull builds on Linux only (it uses splice, copy_file_range, renameat2, statfs and /proc)")
#endif

let package = Package(
    name: "Fastpull",
    products: [
        .library(name: "Fastpull", targets: ["Fastpull"]),
        .executable(name: "fastpull", targets: ["fastpull"]),
        .library(name: "FastpullFixtures", targets: ["FastpullFixtures"]),
        .executable(name: "fastpull-fixture-server", targets: ["fastpull-fixture-server"]),
        .executable(name: "fastpull-bench", targets: ["fastpull-bench"]),
        .plugin(name: "FetchArtifacts", targets: ["FetchArtifacts"]),
    ],
    targets: [
        .systemLibrary(
            name: "COpenSSL",
            pkgConfig: "openssl",
            providers: [.apt(["libssl-dev"])]
        ),
        // SQLite, for the download manager's persistent list (Debian's libsqlite3-dev).
        .systemLibrary(name: "CSQLite", pkgConfig: "sqlite3", providers: [.apt(["libsqlite3-dev"])]),
        // Linux calls glibc declares only under _GNU_SOURCE (splice, pipe2); header only.
        .systemLibrary(name: "CLinux"),
        // Sockets, TLS, system calls and threads: the layer under HTTP and the engine, which imports
        // nothing of theirs.
        .target(name: "FastpullNet", dependencies: ["COpenSSL", "CLinux"]),
        // HTTP/1.1 over those connections: requests, response heads, bodies, proxies, the connection
        // pool. It imports nothing of the engine.
        .target(name: "FastpullHTTP", dependencies: ["FastpullNet", "COpenSSL", "CLinux"]),
        // The engine: probe, plan, schedule, fetch, write, journal, verify, and the vocabulary the API
        // speaks (Configuration, Event, Report, FastpullError). It imports nothing of the API above it.
        .target(name: "FastpullEngine", dependencies: ["FastpullHTTP", "FastpullNet", "COpenSSL", "CLinux"]),
        // The public API a build tool links: FastpullClient, Download, Batch and the free functions,
        // re-exporting the engine's vocabulary.
        .target(name: "Fastpull", dependencies: ["FastpullEngine", "FastpullHTTP", "FastpullNet"]),
        // The download manager: a persistent list of downloads (SQLite), each with its state, order and
        // options, built on FastpullClient.
        .target(
            name: "FastpullManager",
            dependencies: ["Fastpull", "FastpullEngine", "FastpullNet", "CSQLite", "COpenSSL"]),
        // The command line's pure logic (options, help, batch files, .netrc, --json, man page and
        // completions), so that Fastpull is the API a build tool links and nothing else.
        .target(name: "FastpullCommandLine", dependencies: ["Fastpull", "FastpullEngine", "FastpullHTTP"]),
        .executableTarget(
            name: "fastpull",
            dependencies: [
                "Fastpull", "FastpullEngine", "FastpullNet", "FastpullCommandLine", "FastpullManager",
            ]),
        .target(name: "FastpullFixtures", dependencies: ["COpenSSL", "CLinux"]),
        .executableTarget(name: "fastpull-fixture-server", dependencies: ["FastpullFixtures"]),
        .executableTarget(
            name: "fastpull-bench",
            // COpenSSL for the SHA-256 and piece SHA-1 digests the mirror scenarios give the tools.
            dependencies: ["FastpullFixtures", "COpenSSL"],
            path: "Benchmarks/fastpull-bench"
        ),
        .plugin(
            name: "FetchArtifacts",
            capability: .command(
                intent: .custom(
                    verb: "fetch-artifacts",
                    description:
                        "Download the files listed in artifacts.json in parallel and verify their SHA-256"
                ),
                permissions: [
                    .writeToPackageDirectory(reason: "The artifacts are saved inside the package."),
                    .allowNetworkConnections(
                        scope: .all(), reason: "The artifacts are downloaded from their URLs."),
                ]
            ),
            dependencies: ["fastpull"]
        ),
        .testTarget(
            name: "FastpullTests",
            dependencies: [
                "Fastpull", "FastpullEngine", "FastpullHTTP", "FastpullNet", "FastpullCommandLine", "CLinux",
            ]),
        .testTarget(
            name: "FastpullIntegrationTests",
            dependencies: ["Fastpull", "FastpullEngine", "FastpullHTTP", "FastpullNet", "FastpullFixtures"]
        ),
        .testTarget(
            name: "FastpullCLITests",
            dependencies: [
                "Fastpull", "FastpullEngine", "FastpullCommandLine", "fastpull", "fastpull-fixture-server",
                "FastpullFixtures", "CLinux",
            ]
        ),
        .testTarget(
            name: "FastpullManagerTests", dependencies: ["FastpullManager", "Fastpull", "FastpullFixtures"]),
        // Fastpull against real servers and proxies (nginx, lighttpd, apache2, h2o, moto S3, squid,
        // tinyproxy) that scripts/test-deps.sh installs.
        .testTarget(
            name: "FastpullInteropTests",
            dependencies: ["Fastpull", "FastpullEngine", "FastpullHTTP", "fastpull", "FastpullFixtures"]
        ),
    ]
)
