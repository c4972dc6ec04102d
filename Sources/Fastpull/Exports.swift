// The engine's vocabulary (Configuration, Event, Report, FastpullError, Checksum, Metalink, …) is the
// API's: `import Fastpull` brings it.
@_exported import FastpullEngine
