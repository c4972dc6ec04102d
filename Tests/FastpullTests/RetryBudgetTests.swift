import Foundation
import Testing

@testable import Fastpull
@testable import FastpullEngine
@testable import FastpullHTTP
@testable import FastpullNet

/// The one retry policy: what each failure leads to, from the failures before it in a row.
@Suite("RetryBudget")
struct RetryBudgetTests {
    let url = URL(string: "http://127.0.0.1:9/x")!
    var stale: Failure { Failure(HTTPBodyError.closedBeforeResponse, url: url) }
    var reset: Failure { Failure(NetError.reset("connection reset by peer during read"), url: url) }
    var refused: Failure {
        Failure(
            NetError.connect(host: "127.0.0.1", port: 9, message: NetError.errnoText(ECONNREFUSED)), url: url)
    }
    let policy = RetryPolicy(baseDelay: .milliseconds(100))

    /// The attempts of the decisions, `0` for a free one and `-1` for giving up.
    func attempts(_ decisions: [RetryBudget.Decision]) -> [Int] {
        decisions.map {
            switch $0 {
            case .now: 0
            case .after(_, let attempt): attempt
            case .giveUp: -1
            }
        }
    }

    @Test func failuresCountUpToTheRetriesThenGiveUp() {
        var budget = RetryBudget(retries: 3, policy: policy)
        let decisions = (0..<5).map { _ in budget.decide(after: reset) }
        #expect(attempts(decisions) == [1, 2, 3, -1, -1])
        for case .after(let delay, let attempt) in decisions {
            // Backoff: within half and all of base × 2^(attempt-1).
            let ceiling = Duration.milliseconds(100) * (1 << (attempt - 1))
            #expect(delay >= ceiling / 2 && delay <= ceiling)
        }
    }

    @Test func aStaleConnectionIsFreeOnceInARowAndNotAfterBytes() {
        var budget = RetryBudget(retries: 1, policy: policy)
        let twice = [budget.decide(after: stale), budget.decide(after: stale)]
        #expect(attempts(twice) == [0, 1])
        budget.succeeded()
        let afterBytes = budget.decide(after: stale, wroteBytes: true)
        #expect(attempts([afterBytes]) == [1])
    }

    /// A host name that does not resolve fails at once, unless refused connections are retried (a
    /// service still starting, whose name its network adds when it starts): then it takes the
    /// whole budget.
    @Test func anUnknownHostIsRetriedOnlyWhenAsked() {
        let unknown = Failure(
            NetError.resolve(host: "service.test", message: "Name or service not known", permanent: true),
            url: url)
        #expect(unknown.unknownHost)
        var plain = RetryBudget(retries: 5, policy: policy)
        #expect(plain.decide(after: unknown) == .giveUp)
        var asked = policy
        asked.retriesRefused = true
        var budget = RetryBudget(retries: 3, policy: asked)
        #expect(attempts((0..<4).map { _ in budget.decide(after: unknown) }) == [1, 2, 3, -1])
    }

    /// A proxy nobody listens on is refused as an origin is: the same small limit, not the whole
    /// budget with its backoff (6.5 s per file before).
    @Test func aRefusedProxyHasTheRefusedLimit() {
        let proxy = Failure(
            NetError.proxy(
                "http://127.0.0.1:9",
                .connect(host: "127.0.0.1", port: 9, message: NetError.errnoText(ECONNREFUSED))), url: url)
        #expect(proxy.refused)
        var budget = RetryBudget(retries: 50, policy: policy)
        let decisions = (0..<3).map { _ in budget.decide(after: proxy) }
        #expect(attempts(decisions) == [1, 2, -1])
    }

    /// With a time limit, failures in a row are retried while the wait ends within it of the first,
    /// however many retries the count still allows; progress starts the time again.
    @Test func aTimeLimitEndsRetriesTheCountAllows() {
        var timed = policy
        timed.maximumTime = .seconds(1)
        var budget = RetryBudget(retries: 1000, policy: timed)
        let t0 = ContinuousClock.now
        // 100, 200, 400 ms at most: within the second.
        let early = [0.0, 0.1, 0.3].map {
            budget.decide(after: reset, now: t0 + .milliseconds(Int64($0 * 1000)))
        }
        #expect(attempts(early) == [1, 2, 3])
        // A wait that would end past a second from the first failure is not made.
        #expect(budget.decide(after: reset, now: t0 + .milliseconds(950)) == .giveUp)
        // Bytes came: the failures before no longer count, in number or in time.
        budget.progressed()
        #expect(attempts([budget.decide(after: reset, now: t0 + .seconds(5))]) == [1])
    }

    /// A refused connection is tried again at most ``RetryPolicy/refusedRetries`` times, a short
    /// fixed wait apart, however large the budget.
    @Test func refusedConnectionsHaveTheirOwnSmallLimit() {
        var budget = RetryBudget(retries: 50, policy: policy)
        let decisions = (0..<4).map { _ in budget.decide(after: refused) }
        #expect(attempts(decisions) == [1, 2, -1, -1])
        #expect(decisions.first == .after(RetryPolicy.refusedDelay, attempt: 1))
    }

    /// Asked to (`--retry-connrefused`), a refused connection is tried like any failure: the whole
    /// budget, with the backoff between tries.
    @Test func refusedConnectionsMayHaveTheWholeBudget() {
        var patient = policy
        patient.retriesRefused = true
        var budget = RetryBudget(retries: 4, policy: patient)
        let decisions = (0..<5).map { _ in budget.decide(after: refused) }
        #expect(attempts(decisions) == [1, 2, 3, 4, -1])
        guard case .after(let first, _) = decisions[0], case .after(let third, _) = decisions[2] else {
            Issue.record("\(decisions)")
            return
        }
        #expect(
            first != RetryPolicy.refusedDelay || third != RetryPolicy.refusedDelay,
            "backoff, not a fixed wait")
        #expect(third >= patient.baseDelay * 2, "the third waits at least half of four base delays")
    }

    @Test func progressAndSuccessStartTheCountAgain() {
        var budget = RetryBudget(retries: 2, policy: policy)
        _ = budget.decide(after: reset)
        _ = budget.decide(after: reset)
        budget.progressed()
        let next = budget.decide(after: reset)
        #expect(attempts([next]) == [1])
        budget.succeeded()
        #expect(budget.failures == 0)
    }

    /// A stall that delivered nothing counts; one that delivered something does not.
    @Test func stallsCountOnlyWhenNothingCame() {
        var budget = RetryBudget(retries: 2, policy: policy)
        let afterBytes = budget.stalled(wroteBytes: true)
        #expect(afterBytes && budget.failures == 0)
        let afterNothing = [budget.stalled(wroteBytes: false), budget.stalled(wroteBytes: false)]
        #expect(afterNothing == [true, true])
        #expect(budget.failures >= budget.stallsBeforeDroppingASource)
        let third = budget.stalled(wroteBytes: false)
        #expect(!third)
    }

    // The free retry for a kept-alive connection the server closed while idle, on its own.

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
