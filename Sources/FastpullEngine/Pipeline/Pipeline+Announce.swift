import FastpullHTTP
import FoundationEssentials

extension Pipeline {
    /// Tells the download's consumers what the probe found. A plan-only download stops here: it
    /// leaves its plan (``DownloadJob/stopPlanned(_:)``) and throws.
    func announce(_ outcome: Probe.Outcome, roundTrip: Duration) throws {
        let remote = outcome.remote
        download.emit(.probe(Event.Probe(remote)))
        guard download.planOnly else { return }
        let answer =
            download.keepsProbeAnswer
            ? outcome.pendingBody.map { UnreadAnswer(connection: $0.connection, head: $0.head) } : nil
        if answer == nil { outcome.pendingBody?.connection.close() }
        let probed = Probed(
            remote: remote, requestCost: outcome.requestCost, roundTrip: roundTrip, answer: answer)
        guard remote.acceptsRanges, let size = remote.size, size > 0 else {
            let segments = remote.size.map { [0..<$0] } ?? []
            throw download.stopPlanned(
                Planned(
                    plan: Event.Plan(probe: Event.Probe(remote), segments: segments, connections: 1),
                    probed: probed))
        }
        let plan = Planner.plan(
            size: size, connections: configuration.connectionLimit,
            minimumSegmentSize: max(configuration.connections.minimumSegmentSize, 1))
        // An interrupted download of this URL at the destination, which a run would resume: the
        // plan is what is left of it.
        if let kept = resumablePreview(remote: remote, size: size) {
            let left = kept.filter { !$0.isComplete }
            throw download.stopPlanned(
                Planned(
                    plan: Event.Plan(
                        probe: Event.Probe(remote), segments: left.map { $0.resumeOffset..<$0.end },
                        connections: min(configuration.connectionLimit, max(left.count, 1)),
                        resumedBytes: kept.reduce(0) { $0 + $1.written }),
                    probed: probed))
        }
        throw download.stopPlanned(
            Planned(
                plan: Event.Plan(
                    probe: Event.Probe(remote), segments: plan.segments.map { $0.start..<$0.end },
                    connections: plan.connections),
                probed: probed))
    }

    /// Tells the download's consumers how the file is split, and hands the scheduler to the download
    /// for its completion map.
    func announce(_ plan: Plan, remote: RemoteFile, resumedBytes: Int64, scheduler: Scheduler?) {
        if let scheduler { download.track(scheduler) }
        download.emit(
            .plan(
                Event.Plan(
                    probe: Event.Probe(remote), segments: plan.segments.map { $0.start..<$0.end },
                    connections: plan.connections, resumedBytes: resumedBytes)))
    }
}
