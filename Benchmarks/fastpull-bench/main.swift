// The benchmark harness is built in its own issue; this placeholder keeps the target in the package.
print("fastpull-bench: not implemented yet")
