import Testing

@testable import Fastpull
@testable import FastpullEngine

/// The places of the per-host limit one download holds: its own, taken before its probe, serves its
/// first connection; further connections take new ones; places are interchangeable.
@Suite("DownloadPlaces")
struct DownloadPlacesTests {
    @Test func theOwnPlaceServesTheFirstConnectionAndFurtherOnesCountAgainstTheHost() {
        let limiter = HostConnectionLimiter()
        let host = "h.test:80"
        // The download's own place, as the pipeline takes it before the probe.
        #expect(limiter.acquire(host, limit: 3))
        let places = DownloadPlaces(limiter: limiter, host: host, limit: 3, ownPlace: true)
        #expect(places.available == 3)  // its own, and two more
        #expect(places.acquire())  // the first connection: the own place, nothing new counted
        #expect(limiter.count(host) == 1)
        #expect(places.acquire() && places.acquire())
        #expect(limiter.count(host) == 3)
        #expect(!places.acquire())  // the host is full
        #expect(places.available == 0)
        // A connection that ends gives back a further place first; the own one stays held.
        places.release()
        #expect(limiter.count(host) == 2)
        places.release()
        places.release()
        #expect(limiter.count(host) == 1)  // only the own place, until the pipeline releases it
        #expect(places.available == 3)
        // Another download of the same host meanwhile has what is left.
        #expect(limiter.acquire(host, limit: 3) && limiter.acquire(host, limit: 3))
        #expect(places.available == 1)  // its own place only
    }

    /// After a redirect to another host the own place (of the first host) serves nothing there.
    @Test func withoutAnOwnPlaceEveryConnectionTakesANewOne() {
        let limiter = HostConnectionLimiter()
        let places = DownloadPlaces(limiter: limiter, host: "other.test:443", limit: 2, ownPlace: false)
        #expect(places.acquire() && places.acquire())
        #expect(!places.acquire())
        places.release()
        places.release()
        places.release()  // one too many gives back nothing it did not take
        #expect(limiter.count("other.test:443") == 0)
    }
}
