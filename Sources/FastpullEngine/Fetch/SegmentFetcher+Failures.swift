import FastpullHTTP
import FoundationEssentials

/// What a connection tells of its windows, and how it judges a failure: a refusal, or a source to
/// drop.
extension SegmentFetcher {
    func note(_ assignment: SegmentTable.Assignment, window: SegmentTable.Window, source: Int?) {
        let range = window.range
        trace?.record(
            "window", connection: worker,
            [
                "start": range.lowerBound, "end": range.upperBound, "how": assignment.traceName,
                "source": source ?? 0,
            ])
        switch assignment {
        case .stolen(let victim, let at), .hedged(let victim, let at):
            var hedged = false
            if case .hedged = assignment { hedged = true }
            let end = scheduler.snapshot().first { $0.start == window.piece }?.end ?? range.upperBound
            emit(.steal(from: victim, to: worker, offset: at, end: end, hedged: hedged))
        case .continued, .waiting, .opened, .ahead:
            break
        }
    }

    /// Why a source that failed this way should no longer be used, when another is left: an answer
    /// that will not change (an error status that is no retry's business, another version of the file,
    /// no ranges), or a failure that repeats (`failures` of the source's requests in a row before this
    /// one, however much each delivered, of `retries`). Nil: retry it.
    static func reasonToDrop(_ error: any Error, from url: URL, failures: Int, retries: Int) -> String? {
        if error is WholeFileAnswered { return "it answered a range request with the whole file" }
        let failure = Failure(error, url: url)
        if !failure.retryable || failure.unknownHost || failure.error.code == .remoteChanged {
            return failure.error.message
        }
        if failures + 1 >= RetryBudget.failuresBeforeDroppingASource(retries: retries),
            !failure.staleConnection
        {
            return "\(failure.error.message) (\(failures + 1) requests in a row)"
        }
        return nil
    }

    static func isRefusal(_ error: any Error) -> Bool {
        if case TransferError.status(let status, _, _) = error { return status == 429 || status == 503 }
        return false
    }
}

extension SegmentTable.Assignment {
    var traceName: String {
        switch self {
        case .continued: return "continued"
        case .ahead: return "ahead"
        case .waiting: return "next"
        case .stolen: return "stolen"
        case .hedged: return "hedged"
        case .opened: return "opened"
        }
    }
}
