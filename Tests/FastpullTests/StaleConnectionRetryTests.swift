import Foundation
import Testing

@testable import Fastpull
@testable import FastpullNet

/// The free retry for a kept-alive connection the server closed while idle.
@Suite("StaleConnectionRetry")
struct StaleConnectionRetryTests {
    let url = URL(string: "http://127.0.0.1:9/x")!
    var stale: Failure { Failure(HTTPBodyError.closedBeforeResponse, url: url) }
    var reset: Failure { Failure(NetError.reset("connection reset by peer during read"), url: url) }

    @Test func theFirstStaleConnectionInARowIsFreeTheSecondCounts() {
        var rule = StaleConnectionRetry()
        #expect(stale.staleConnection)
        let answers = (0..<3).map { _ in rule.isFree(stale) }
        #expect(answers == [true, false, false])
    }

    @Test func anotherFailureOrASuccessRearmsIt() {
        var rule = StaleConnectionRetry()
        var answers = [rule.isFree(stale), rule.isFree(reset), rule.isFree(stale)]
        rule.rearm()
        answers.append(rule.isFree(stale))
        #expect(answers == [true, false, true, true])
    }

    @Test func aConnectionThatAnsweredIsNotStale() {
        var rule = StaleConnectionRetry()
        let answers = [rule.isFree(stale, nothingWritten: false), rule.isFree(stale)]
        #expect(answers == [false, true])
    }
}
