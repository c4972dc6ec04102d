// swift-tools-version: 6.0
// A package that uses Fastpull's `fetch-artifacts` command plugin. Its artifacts.json lists files the
// fixture server generates; with `fastpull-fixture-server --port 8080` running,
//
//     swift package --allow-writing-to-package-directory --allow-network-connections all fetch-artifacts
//
// saves them under Artifacts/ and verifies their SHA-256. The CLI tests run it against their own server.
import PackageDescription

let package = Package(
    name: "PluginDemo",
    dependencies: [
        .package(path: "../..")
    ],
    targets: [
        .target(name: "PluginDemo")
    ]
)
