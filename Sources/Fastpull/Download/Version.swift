/// Fastpull's version, sent in `User-Agent` and printed by `fastpull --version`.
public let fastpullVersion = "0.1.0"
