/// Fastpull's version, in one place: the library's `fastpullVersion` and the `User-Agent` read it.
package enum FastpullVersion {
    package static let number = "0.1.0"
}
