import FastpullHTTP
import FastpullNet
import FoundationEssentials

/// One connection's work loop: ask the scheduler for a window (more of its own range, a waiting
/// range, a stolen half, or a slow connection's tail), fetch it with a ranged GET into the file, and
/// ask again, reusing the connection (keep-alive). Bytes are claimed before they are written, so a
/// range cut by a steal stops exactly at its new end. A failure gives the range back and retries with
/// backoff; progress resets the failure budget.
///
/// Runs on its own ``ThreadExecutor``: its socket calls block that thread only.
package struct SegmentFetcher: Sendable {
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
    /// How received bytes reach the file (a mapping, a splice, or `pwrite`).
    var writePath: WritePath = .none
    /// Where an answer with the whole file goes (``WholeFileAnswered``); nil: it is closed.
    var wholeFile: WholeFileHandOff? = nil

    func run() async throws -> Outcome {
        defer {
            scheduler.leave(worker)
            sources?.leave(worker)
        }
        trace?.record("open", connection: worker)
        return try await withTaskCancellationHandler {
            var budget = RetryBudget(retries: retries, policy: policy)
            let pipe = writePath.copiesOnly ? nil : SplicePipe()
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
                    budget.succeeded()
                } catch is Cut {
                    // The connection closed with the rest of its answer unread; the next opens anew.
                    trace?.record(
                        "cut", connection: worker,
                        ["start": window.range.lowerBound, "bytes": written, "closed": true])
                    budget.progressed()
                } catch {
                    if slot.isCancelled { throw CancellationError() }
                    if written > 0 { budget.progressed() }
                    if let bound, let sources {
                        // A source that has been dropped: its connection was closed for that; the next
                        // window goes to another source.
                        if !sources.isLive(bound.index) {
                            _ = slot.takeEviction()
                            budget.progressed()
                            continue
                        }
                        // A mirror full for this client: the connection goes to one with room, or, with
                        // every source full, ends as a refusal of the download (fewer connections).
                        let refusal = !slot.isEvicted && Self.isRefusal(error)
                        if refusal, sources.refused(bound.index, worker: worker) {
                            trace?.record("refused", connection: worker, ["source": bound.index])
                            if !sources.isLive(bound.index) {
                                emit(
                                    .sourceDropped(
                                        url: bound.remote.url, reason: SourceSet.refusedEveryRequest))
                            }
                            try await AlarmClock.sleep(for: SourceSet.refusalPause)
                            continue
                        }
                        if !slot.isEvicted, !refusal,
                            let reason = Self.reasonToDrop(
                                error, from: source.finalURL, failures: sources.failed(bound.index) - 1,
                                retries: retries),
                            sources.drop(bound.index, reason: reason)
                        {
                            wholeFile?.discard(worker)
                            emit(.sourceDropped(url: bound.remote.url, reason: reason))
                            trace?.record("close", connection: worker, ["reason": "source dropped"])
                            budget.progressed()
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
                        let another = budget.stalled(wroteBytes: written > 0)
                        // A source that stalls every try is dropped while another is left.
                        if let bound, let sources, budget.failures >= budget.stallsBeforeDroppingASource {
                            let reason = "it sent nothing for the stall timeout \(budget.failures) times"
                            if sources.drop(bound.index, reason: reason) {
                                emit(.sourceDropped(url: bound.remote.url, reason: reason))
                                budget.progressed()
                                continue
                            }
                        }
                        guard another else {
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
                    // A refusal, or no descriptor left, while other connections work: this one goes
                    // (the download runs with fewer), whatever the budget says.
                    // (A stale connection is neither.)
                    if Self.isRefusal(error), scheduler.workingConnections(besides: worker) > 0 {
                        trace?.record("close", connection: worker, ["reason": "refused"])
                        return .refused
                    }
                    if failure.outOfDescriptors, scheduler.workingConnections(besides: worker) > 0 {
                        trace?.record("close", connection: worker, ["reason": "out of descriptors"])
                        return .shed(failure.error)
                    }
                    let delay: Duration
                    let attempt: Int
                    switch budget.decide(after: failure, wroteBytes: written > 0) {
                    case .now: continue
                    case .giveUp:
                        trace?.record("close", connection: worker, ["reason": "gave up"])
                        return .gaveUp(failure.error)
                    case .after(let wait, let count): (delay, attempt) = (wait, count)
                    }
                    // Let another connection take the range while this one waits.
                    scheduler.leave(worker)
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
                    counters.waitForRetry(attempt, of: retries, reason: failure.error.message, delay: delay)
                    defer { counters.retryStarted() }
                    try await AlarmClock.sleep(for: delay)
                }
            }
        } onCancel: {
            slot.cancel()
        }
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
    func fetch(
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
            guard let wholeFile else {
                connection.close()
                throw TransferError.wholeFile(requested: requested)
            }
            wholeFile.park(connection, head: head, worker: worker)
            throw WholeFileAnswered(worker: worker, requested: requested)
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
        /// Bytes of the answer read into memory (the connection's buffer, or a scratch one), into the file.
        func take(_ bytes: UnsafeRawBufferPointer) throws {
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
        // Bytes received straight into a shared mapping of the file (``WritableMapping``): claimed
        // before they are received, a few milliseconds of the connection's rate at a time, so that no
        // byte lands outside this connection's window; committed as soon as they are in. While a
        // request is out ahead, or the rest of a cut answer is drained, they go through memory.
        var viaMapping: Int64 = 0
        let mapped: HTTPConnection.Splice? = writePath.mapping.map { mapping in
            var rate = 0.0
            return { transport, remaining in
                settleLease()
                let limit = min(remaining, end - received)
                guard sentAhead == nil, !draining else {
                    return try Self.readThroughMemory(from: transport, upTo: limit, into: take)
                }
                let want = min(
                    limit, max(Self.leastMappedClaim, min(ClaimLease.most, Int64(rate * ClaimLease.span))))
                let (granted, measured) = scheduler.exchange(worker, commit: 0, claim: want)
                rate = measured
                guard granted > 0, mapping.populate(offset..<offset + granted) else {
                    // Cut here (the rest goes through memory and is dropped), or pages the file system
                    // cannot give: `pwrite` then says why.
                    scheduler.settle(worker, commit: 0, unclaim: granted)
                    return try Self.readThroughMemory(from: transport, upTo: limit, into: take)
                }
                var got: Int64 = 0
                func settle() {
                    viaMapping += got
                    scheduler.settle(worker, commit: got, unclaim: granted - got)
                    counters.addWritten(got)
                    offset += got
                    total += got
                    received += got
                }
                do {
                    while got < granted {
                        let count = try mapping.receive(
                            from: transport, count: Int(granted - got), at: offset + got)
                        if count == 0 { break }
                        got += Int64(count)
                    }
                } catch {
                    settle()
                    throw error
                }
                settle()
                sendAheadIfDue()
                return Int(got)
            }
        }
        /// The answer's body, into the file.
        func readBody() throws {
            // What went straight into the mapping, for the trace.
            defer {
                trace?.record(
                    "body", connection: worker, ["start": window.range.lowerBound, "mapped": viaMapping])
            }
            try connection.readBody(of: head, method: "GET", splice: mapped ?? splice, into: take)
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
}
