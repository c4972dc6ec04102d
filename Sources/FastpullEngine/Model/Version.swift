import FastpullHTTP

/// Fastpull's version, sent in `User-Agent` and printed by `fastpull --version`.
public let fastpullVersion = FastpullVersion.number
