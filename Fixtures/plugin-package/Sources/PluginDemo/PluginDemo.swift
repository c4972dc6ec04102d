/// Where `swift package fetch-artifacts` puts the files of artifacts.json.
public let artifactsFolder = "Artifacts"
