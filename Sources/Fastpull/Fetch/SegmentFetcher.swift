import FoundationEssentials

/// One connection's work loop: ask the scheduler for a window (more of its own range, a waiting
/// range, a stolen half, or a slow connection's tail), fetch it with a ranged GET into the file, and
/// ask again, reusing the connection (keep-alive). Bytes are claimed before they are written, so a
/// range cut by a steal stops exactly at its new end. A failure gives the range back and retries with
/// backoff; progress resets the failure budget.
///
/// Runs on its own ``ThreadExecutor``: its socket calls block that thread only.
struct SegmentFetcher: Sendable {
    /// How a fetcher ended without throwing.
    typealias Outcome = FetchLoop.Outcome

    /// Thrown out of a body when the range was cut: the rest of the response is not ours.
    private struct Cut: Error {}

    let worker: Int
    let remote: RemoteFile
    let size: Int64
    let pool: ConnectionPool
    /// Where the bytes go: the `.part` file, or an output that takes them in order.
    let destination: any ByteDestination
    let scheduler: Scheduler
    let counters: TransferCounters
    let retries: Int
    let policy: RetryPolicy
    let slot: CancellationSlot
    let trace: TraceRecorder?
    let emit: @Sendable (Event) -> Void
    /// The servers of the file when it has several (nil: `remote` alone), and which bytes were asked
    /// from which.
    var sources: SourceSet? = nil
    var sourceMap: SourceMap? = nil
    /// The probe's answer for the file's first bytes, unread, when this connection takes it over.
    var opening: OpeningAnswer? = nil

    func run() async throws -> Outcome {
        defer {
            scheduler.leave(worker)
            sources?.leave(worker)
        }
        trace?.record("open", connection: worker)
        return try await withTaskCancellationHandler {
            var failures = 0
            var stale = StaleConnectionRetry()
            let pipe = SplicePipe()
            // This connection's own kept-alive socket between its requests, back to the shared idle
            // ones when it ends (``ConnectionPool/exchange(_:to:slot:preferring:)``).
            var kept: HTTPConnection?
            defer { if let kept { pool.giveBack(kept) } }
            // The request for this connection's next window, sent before its answer ended.
            var ahead: Ahead?
            defer { ahead?.connection.close() }
            while true {
                if slot.isCancelled { throw CancellationError() }
                if slot.isRetired {
                    trace?.record("close", connection: worker, ["reason": "retired"])
                    return .retired
                }
                let window: SegmentTable.Window
                let assignment: SegmentTable.Assignment
                // The answer to the request sent ahead comes next on its connection. Its head, where
                // the answer before it ended, proves that answer's framing (``proveFraming(_:)``);
                // then it is ours to read, unless a steal or a cut took its window meanwhile (the
                // connection closes then).
                var pipelined: (window: SegmentTable.Window, answer: (HTTPConnection, ResponseHead))?
                if let pending = ahead.take() {
                    guard let head = try proveFraming(pending) else { continue }
                    if scheduler.takeAhead(worker, pending.window) {
                        pipelined = (pending.window, (pending.connection, head))
                    } else {
                        pending.connection.close()
                    }
                }
                // The probe's answer first, when this connection took it over.
                let opened = pipelined == nil ? opening?.take() : nil
                var answered = pipelined?.answer
                if let pipelined {
                    window = pipelined.window
                    assignment = .ahead
                } else if let opened {
                    guard let adopted = opened.window else {
                        opened.connection.close()
                        continue
                    }
                    window = adopted
                    assignment = .opened
                    answered = (opened.connection, opened.head)
                } else {
                    switch scheduler.nextWork(for: worker) {
                    case .done:
                        trace?.record("close", connection: worker, ["reason": "finished"])
                        return .finished
                    case .wait(let horizon):
                        // The output takes bytes in order and holds no more ahead: wait for it.
                        scheduler.waitForHorizon(beyond: horizon)
                        continue
                    case .window(let next, let how):
                        window = next
                        assignment = how
                    }
                }
                scheduler.waitForHasher()
                let bound = sources?.bind(worker)
                note(assignment, window: window, source: bound?.index)
                let source = bound?.remote ?? remote
                if let bound {
                    sourceMap?.record(window.range, source: bound.index)
                    scheduler.setGroup(worker, bound.index)
                }
                let started = ContinuousClock.now
                var written: Int64 = 0
                var complete = false
                defer {
                    if let bound {
                        sources?.served(
                            bound.index, bytes: written, seconds: (ContinuousClock.now - started).seconds,
                            complete: complete)
                    }
                }
                do {
                    let drained = try fetch(
                        window, from: source, pipe: pipe, written: &written, kept: &kept, ahead: &ahead,
                        answered: answered)
                    complete = true
                    trace?.record(
                        drained ? "cut" : "done", connection: worker,
                        ["start": window.range.lowerBound, "bytes": written])
                    failures = 0
                    stale.rearm()
                } catch is Cut {
                    // The connection closed with the rest of its answer unread; the next opens anew.
                    trace?.record(
                        "cut", connection: worker,
                        ["start": window.range.lowerBound, "bytes": written, "closed": true])
                    failures = 0
                } catch {
                    if slot.isCancelled { throw CancellationError() }
                    if written > 0 { failures = 0 }
                    if let bound, let sources {
                        // A source that has been dropped: its connection was closed for that; the next
                        // window goes to another source.
                        if !sources.isLive(bound.index) {
                            _ = slot.takeEviction()
                            failures = 0
                            continue
                        }
                        // A mirror full for this client: the connection goes to one with room, or, with
                        // every source full, ends as a refusal of the download (fewer connections).
                        let refusal = !slot.isEvicted && Self.isRefusal(error)
                        if refusal, sources.refused(bound.index, worker: worker) {
                            trace?.record("refused", connection: worker, ["source": bound.index])
                            continue
                        }
                        if !slot.isEvicted, !refusal,
                            let reason = Self.reasonToDrop(
                                error, from: source.finalURL, failures: sources.failed(bound.index) - 1,
                                retries: retries),
                            sources.drop(bound.index, reason: reason)
                        {
                            emit(.sourceDropped(url: bound.remote.url, reason: reason))
                            trace?.record("close", connection: worker, ["reason": "source dropped"])
                            failures = 0
                            continue
                        }
                    }
                    if slot.takeEviction() {
                        // Stopped because the file is in (its piece was taken over while it waited, or
                        // it was dropping the rest of a cut answer): no failure. Its window ends here,
                        // with what it wrote (a cut, as a drained one: no reconnect follows).
                        if scheduler.isComplete {
                            trace?.record(
                                "cut", connection: worker,
                                ["start": window.range.lowerBound, "bytes": written])
                            trace?.record("close", connection: worker, ["reason": "finished"])
                            return .finished
                        }
                        sources?.reconsider(worker)
                        trace?.record(
                            "stall", connection: worker, ["start": window.range.lowerBound, "bytes": written])
                        // A stall that delivered nothing counts against the budget, or a server that
                        // never sends would be retried forever.
                        if written == 0 { failures += 1 }
                        // A source that stalls every try is dropped while another is left.
                        if let bound, let sources, failures >= min(retries, 2) {
                            let reason = "it sent nothing for the stall timeout \(failures) times"
                            if sources.drop(bound.index, reason: reason) {
                                emit(.sourceDropped(url: bound.remote.url, reason: reason))
                                failures = 0
                                continue
                            }
                        }
                        guard failures <= retries else {
                            return .gaveUp(
                                FastpullError(
                                    .network,
                                    "\(remote.finalURL.redactedForDisplay) sent nothing for the stall timeout on every try"
                                ))
                        }
                        continue
                    }
                    let failure = Failure(error, url: remote.finalURL)
                    // The original error goes up: the pipeline decides what a changed file means.
                    guard failure.retryable else { throw error }
                    if stale.isFree(failure, nothingWritten: written == 0) { continue }
                    if Self.isRefusal(error), scheduler.workingConnections(besides: worker) > 0 {
                        trace?.record("close", connection: worker, ["reason": "refused"])
                        return .refused
                    }
                    if failure.outOfDescriptors, scheduler.workingConnections(besides: worker) > 0 {
                        trace?.record("close", connection: worker, ["reason": "out of descriptors"])
                        return .shed(failure.error)
                    }
                    failures += 1
                    guard RetryPolicy.allowsAnother(failure, failures: failures, retries: retries) else {
                        trace?.record("close", connection: worker, ["reason": "gave up"])
                        return .gaveUp(failure.error)
                    }
                    // Let another connection take the range while this one waits.
                    scheduler.leave(worker)
                    let delay = policy.delay(after: failure, attempt: failures)
                    counters.retries.add(1, ordering: .relaxed)
                    trace?.record(
                        "retry", connection: worker,
                        [
                            "error": failure.error.message, "delay": delay.seconds,
                            "start": window.range.lowerBound, "bytes": written,
                        ])
                    emit(
                        .retry(connection: worker, reason: failure.error.message, delaySeconds: delay.seconds)
                    )
                    counters.waitForRetry(failures, of: retries, reason: failure.error.message, delay: delay)
                    defer { counters.retryStarted() }
                    try await AlarmClock.sleep(for: delay)
                }
            }
        } onCancel: {
            slot.cancel()
        }
    }

    private func note(_ assignment: SegmentTable.Assignment, window: SegmentTable.Window, source: Int?) {
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
        if let answer = error as? WholeFileAnswer {
            answer.connection.close()
            return "it answered a range request with the whole file"
        }
        let failure = Failure(error, url: url)
        if !failure.retryable || failure.error.code == .remoteChanged { return failure.error.message }
        if failures + 1 >= max(min(retries, 3), 1), !failure.staleConnection {
            return "\(failure.error.message) (\(failures + 1) requests in a row)"
        }
        return nil
    }

    private static func isRefusal(_ error: any Error) -> Bool {
        if case TransferError.status(let status, _, _) = error { return status == 429 || status == 503 }
        return false
    }

    /// One request for `window`, written as it arrives, stopping where the scheduler says. On a plain
    /// connection the body goes socket → `pipe` → file without a copy through memory.
    ///
    /// When a steal cuts the window short with little of the answer left (at most ``drainLimit``), the
    /// rest is read and dropped, so the connection stays open for the next request; returns true then.
    /// With more left the connection closes (``Cut``).
    ///
    /// `kept`: this connection's own idle socket, which the request goes on when it can; the
    /// socket the answer came on is kept there afterwards when it can take another request.
    ///
    /// `ahead`: on the way out, the request this answer sent ahead for the connection's next window
    /// (``SegmentTable/aheadLead(for:)``), whose answer comes next on the same connection, with the
    /// bytes of this answer held since it went (claimed and written, not committed): a server that
    /// cuts an answer short when the next request arrives, or runs past its length, puts the next
    /// answer's bytes where this one's last should be, and only the next head, parsed where this
    /// answer ends, proves them (``proveFraming(_:)``). An answer that fails or ends its connection
    /// gives its held bytes back, to be fetched again. A cut with a request ahead closes the
    /// connection (the answer after the cut one is not ours).
    ///
    /// `answered`: the answer's head is here already (the probe's, or the one to a request sent
    /// ahead), and no request is sent.
    private func fetch(
        _ window: SegmentTable.Window, from remote: RemoteFile, pipe: SplicePipe?, written: inout Int64,
        kept: inout HTTPConnection?, ahead: inout Ahead?, answered: (HTTPConnection, ResponseHead)? = nil
    ) throws -> Bool {
        let url = remote.finalURL
        guard let origin = Origin(url) else {
            answered?.0.close()
            throw TransferError.badRedirect(status: 0, location: url.absoluteString)
        }
        let requested = window.range.lowerBound...(window.range.upperBound - 1)
        let connection: HTTPConnection
        let head: ResponseHead
        if let answered {
            (connection, head) = answered
            do {
                try slot.attach(connection)
            } catch {
                connection.close()
                throw error
            }
        } else {
            let request = pool.request(
                "GET", url, origin: origin, range: requested, ifRange: remote.ifRangeValidator)
            let sent = ContinuousClock.now
            (connection, head) = try pool.exchange(request, to: origin, slot: slot, preferring: kept.take())
            // What the request cost: the wait for its answer, less a new connection's setup.
            let setup = connection.requestCount == 1 ? connection.setupTime : .zero
            scheduler.recordFirstByte(worker, after: max(.zero, ContinuousClock.now - sent - setup))
        }
        counters.activeConnections.add(1, ordering: .relaxed)
        // Set when the connection, with an answer not yet read, goes up to the pipeline instead.
        var handedOver = false
        // The request sent ahead on this connection while this answer came, and whether this answer
        // was read to its end (only then does the next one follow it).
        var sentAhead: Ahead?
        // This answer's bytes written since the request went ahead, not committed yet.
        var held: Int64 = 0
        var complete = false
        defer {
            counters.activeConnections.subtract(1, ordering: .relaxed)
            slot.detach()
            if let sentAhead, complete, connection.isReusable, !handedOver {
                ahead = Ahead(
                    window: sentAhead.window, request: sentAhead.request, connection: connection, held: held)
            } else if held > 0 {
                // Unproven: fetched again.
                scheduler.settle(worker, commit: 0, unclaim: held)
            }
            if !handedOver, ahead == nil {
                if sentAhead == nil, connection.isReusable {
                    kept = connection
                } else {
                    connection.close()
                }
            }
        }
        do {
            try Self.validate(head, requested: requested, remote: remote, size: size, connection: connection)
        } catch TransferError.wholeFile {
            handedOver = true
            throw WholeFileAnswer(connection: connection, head: head, requested: requested)
        }

        var offset = requested.lowerBound
        // Where the answer is, counting bytes dropped after a cut.
        var received = requested.lowerBound
        let end = window.range.upperBound
        var total: Int64 = 0
        var draining = false
        defer { written = total }
        /// After `allowed` of `count` bytes were claimed: a cut, drained when little is left (and no
        /// request went ahead: the answer after this one is not ours either).
        func cutShort(allowed: Int, of count: Int) throws {
            guard allowed < count, !draining else { return }
            guard end - received <= Self.drainLimit, sentAhead == nil else { throw Cut() }
            draining = true
        }
        // Where this answer is when the request for the next window goes, looked for at its start and
        // again every 256 KiB while there is none (the connection's speed is measured during its
        // first answer). Not with several sources: each window goes to the source the connection is
        // bound to then.
        var aheadAt: Int64?
        var nextLook: Int64? = sources == nil ? received : nil
        func sendAheadIfDue() {
            if aheadAt == nil, let look = nextLook, received >= look {
                aheadAt = scheduler.aheadLead(for: worker).map { end - $0 }
                nextLook = aheadAt == nil ? received + Self.aheadLookStep : nil
            }
            guard let at = aheadAt, received >= at else { return }
            aheadAt = nil
            guard !draining, connection.isReusable, !slot.isRetired,
                let next = scheduler.windowAhead(for: worker)
            else { return }
            let request = pool.request(
                "GET", url, origin: origin, range: next.range.lowerBound...(next.range.upperBound - 1),
                ifRange: remote.ifRangeValidator)
            do {
                try connection.send(request)
            } catch {
                // The server no longer reads this connection: the answer may still be read to its
                // end (the connection closes after it), and no more requests go ahead.
                stopRequestsAhead(at: window)
                return
            }
            sentAhead = Ahead(window: next, request: request, connection: connection, held: 0)
            // What came before the request went is this answer's: committed now. What comes after
            // it is held (``Ahead/held``).
            settleLease()
            trace?.record(
                "request ahead", connection: worker,
                ["start": next.range.lowerBound, "end": next.range.upperBound])
        }
        // Bytes read into memory are claimed and committed a few milliseconds' worth at a time.
        var lease = ClaimLease()
        func settleLease() {
            lease.settle { commit, unclaim in
                scheduler.settle(worker, commit: commit, unclaim: unclaim)
                counters.addWritten(commit)
            }
        }
        defer { settleLease() }
        // Bytes spliced straight into the file, claimed as they arrive exactly like buffered ones.
        let splice: HTTPConnection.Splice? = pipe.flatMap { pipe in
            guard let file = destination.spliceTarget, pipe.canSplice(from: connection.transport) else {
                return nil
            }
            return { transport, remaining in
                // Bytes that came with the head went through memory: their lease ends here.
                settleLease()
                let (count, allowed) = try pipe.land(
                    from: transport, upTo: Int(min(remaining, end - received)),
                    claim: {
                        draining
                            ? 0
                            : sentAhead != nil
                                ? scheduler.hold(worker, count: $0) : scheduler.claim(worker, count: $0)
                    }, into: file, at: offset)
                if allowed > 0 {
                    if sentAhead != nil {
                        held += Int64(allowed)
                    } else {
                        scheduler.commit(worker, count: allowed)
                        counters.addWritten(Int64(allowed))
                    }
                    offset += Int64(allowed)
                    total += Int64(allowed)
                }
                received += Int64(count)
                try cutShort(allowed: allowed, of: count)
                sendAheadIfDue()
                return count
            }
        }
        /// The answer's body, into the file.
        func readBody() throws {
            try connection.readBody(of: head, method: "GET", splice: splice) { bytes in
                let count = Int64(bytes.count)
                guard received + count <= end else {
                    throw TransferError.bodyTooLong(expected: end - requested.lowerBound)
                }
                received += count
                guard !draining else { return }
                // Held bytes are claimed read by read, with no lease to settle.
                let allowed =
                    sentAhead != nil
                    ? scheduler.hold(worker, count: bytes.count)
                    : Int(
                        lease.allow(count, room: end - offset - lease.leased) { commit, claim in
                            counters.addWritten(commit)
                            return scheduler.exchange(worker, commit: commit, claim: claim)
                        })
                if allowed > 0 {
                    try destination.write(UnsafeRawBufferPointer(rebasing: bytes[0..<allowed]), at: offset)
                    if sentAhead != nil {
                        held += Int64(allowed)
                    } else {
                        let commit = lease.wrote(Int64(allowed))
                        if commit > 0 {
                            scheduler.commit(worker, count: Int(commit))
                            counters.addWritten(commit)
                        }
                    }
                    offset += Int64(allowed)
                    total += Int64(allowed)
                }
                try cutShort(allowed: allowed, of: bytes.count)
                sendAheadIfDue()
            }
        }
        do {
            try readBody()
        } catch {
            // The answer failed with a request out ahead of it: a server that closes a connection
            // after one answer resets it when a request it will not read is waiting (and the answer's
            // last bytes may go with the reset). No more are sent ahead in this download.
            // (Not when the download stopped it on purpose: a cut, or a connection far slower than
            // the others replaced, whatever it had asked.)
            if !(error is Cut), sentAhead != nil, !slot.isEvicted { stopRequestsAhead(at: window) }
            throw error
        }
        guard received == end else {
            throw TransferError.bodyTooShort(
                expected: end - requested.lowerBound, got: received - requested.lowerBound)
        }
        complete = true
        return draining
    }

    /// A server did not answer a request sent ahead (it closed the connection, reset it, or sent
    /// nothing for the stall timeout), or failed the answer before it: requests are no longer sent
    /// ahead in this download (unless the download was stopped, or is complete: its last connections
    /// are stopped on purpose then).
    private func stopRequestsAhead(at window: SegmentTable.Window) {
        guard !slot.isCancelled, !scheduler.isComplete else { return }
        scheduler.stopRequestsAhead()
        trace?.record("ahead stopped", connection: worker, ["start": window.range.lowerBound])
    }

    /// Reads the head of the answer to `pending`'s request and commits the bytes the answer before it
    /// held (``Ahead/held``) when the head proves that answer's framing (``Ahead/isProven(by:)``):
    /// returns the head, its body not yet read. Otherwise (no head came, it did not parse, or it
    /// proves nothing) the held bytes are given back to be fetched again, the connection closes,
    /// this download sends no more requests ahead, and nil is returned.
    private func proveFraming(_ pending: Ahead) throws -> ResponseHead? {
        let connection = pending.connection
        var head: ResponseHead?
        do {
            try slot.attach(connection)
            head = try connection.readHead()
        } catch {
            head = nil
        }
        slot.detach()
        if let head, pending.isProven(by: head) {
            if pending.held > 0 {
                scheduler.commitHeld(worker, count: pending.held)
                counters.addWritten(pending.held)
            }
            pool.onExchange?(pending.request, head)
            return head
        }
        scheduler.settle(worker, commit: 0, unclaim: pending.held)
        connection.close()
        if slot.isCancelled { throw CancellationError() }
        // A stall while waiting for it has cut the range already: no failure of its own.
        _ = slot.takeEviction()
        stopRequestsAhead(at: pending.window)
        trace?.record(
            "ahead unproven", connection: worker,
            ["start": pending.window.range.lowerBound, "held": pending.held, "status": head?.status ?? 0])
        return nil
    }

    /// How many bytes of an answer come between two looks for when its connection's next request may
    /// go ahead, while it may not yet (``SegmentTable/aheadLead(for:)``).
    static let aheadLookStep: Int64 = 256 << 10

    /// The most of a cut answer read and dropped to keep its connection: past this, closing the
    /// connection (and opening another later) is cheaper.
    static let drainLimit: Int64 = 256 << 10

    /// Accepts only a 206 of the version pinned at the probe (``RemoteFile/changeReason(in:)``), framed
    /// as the bytes of one range (not `multipart/byteranges`), whose Content-Range is exactly the
    /// requested range of a file of `size`. Nothing of a response that fails here is written.
    ///
    /// A 200 is the whole file: of another version when its validators say so (a remote change), else
    /// of this one (``TransferError/wholeFile``: the server does not serve ranges now, or, as Apache
    /// does for a file changed within the last minute, took an `If-Range` date for a mismatch). The
    /// connection is left as it is for the caller to read that body.
    static func validate(
        _ head: ResponseHead, requested: ClosedRange<Int64>, remote: RemoteFile, size: Int64,
        connection: HTTPConnection
    ) throws {
        guard head.status == 206 else {
            if (200..<300).contains(head.status) {
                if let reason = remote.changeReason(in: head) {
                    connection.close()
                    throw TransferError.remoteChanged("the server answered with the whole file: \(reason)")
                }
                throw TransferError.wholeFile(requested: requested)
            }
            connection.discardBody(of: head, method: "GET")
            let retryAfter = head.headers["Retry-After"].flatMap { RetryPolicy.parseRetryAfter($0) }
            throw TransferError.status(head.status, reason: head.reason, retryAfter: retryAfter)
        }
        if let reason = remote.changeReason(in: head) {
            connection.close()
            throw TransferError.remoteChanged(reason)
        }
        if head.isMultipartByteranges {
            // Not the bytes of the range asked for: a server (or something before it) that answers
            // unlike the one probed. Nothing of it is written; the download starts over.
            connection.close()
            throw TransferError.remoteChanged(
                "it answered bytes \(requested.lowerBound)-\(requested.upperBound) with a multipart/byteranges body, not the bytes of that range"
            )
        }
        let text = head.headers["Content-Range"] ?? "none"
        guard let range = ContentRange.parse(text), range.first == requested.lowerBound,
            range.last == requested.upperBound
        else {
            connection.close()
            throw TransferError.badContentRange(requested: requested, got: text)
        }
        if let total = range.completeLength, total != size {
            connection.close()
            throw TransferError.remoteChanged("its size changed from \(size) to \(total) bytes")
        }
        if let length = head.contentLength, length != requested.upperBound - requested.lowerBound + 1 {
            connection.close()
            throw TransferError.badContentRange(
                requested: requested, got: "\(text) with Content-Length \(length)")
        }
    }
}

/// A request sent on a connection before the answer it is reading ended (HTTP/1.1 pipelining): the
/// window it asks for, the request, and the connection its answer comes on, after the current one.
struct Ahead {
    let window: SegmentTable.Window
    let request: RequestHead
    let connection: HTTPConnection
    /// The bytes before `window` that the answer before it wrote after this request went: claimed
    /// and written, committed only once this answer's head proves where that answer ended.
    let held: Int64

    /// Whether `head`, read where the answer before it ended by its length, proves that the answer
    /// ended there: a 206 for exactly this window. A server that cut that answer short puts this
    /// one's bytes where its head should be, and one that ran past its length puts its own there; a
    /// head parses there only when those bytes happen to hold one (a file of recorded HTTP traffic
    /// can), and then it is not a 206 for this window. Any other answer (a 200, an error status)
    /// proves nothing: the held bytes are fetched again, which costs one request's lead.
    func isProven(by head: ResponseHead) -> Bool { Self.head(head, proves: window.range) }

    /// Whether `head`, the answer to a request for `range`, proves the framing of the answer before
    /// it (``isProven(by:)``).
    static func head(_ head: ResponseHead, proves range: Range<Int64>) -> Bool {
        guard head.status == 206, !head.isMultipartByteranges,
            let answered = ContentRange.parse(head.headers["Content-Range"] ?? "")
        else { return false }
        return answered.first == range.lowerBound && answered.last == range.upperBound - 1
    }
}

/// A range request answered with the whole file of the pinned version: the connection, its body not
/// yet read, goes to the pipeline, which downloads the file from it as one stream.
struct WholeFileAnswer: Error, @unchecked Sendable {
    // @unchecked: the connection is handed over, not shared; only the pipeline uses it from now on.
    let connection: HTTPConnection
    let head: ResponseHead
    /// The range that was asked for.
    let requested: ClosedRange<Int64>
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
