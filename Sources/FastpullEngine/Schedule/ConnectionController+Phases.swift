/// The phases of an automatic count: the ramp, the trim after it, holding, and the probes up and
/// down from a held count.
extension ConnectionController {
    mutating func ramp(_ measured: Step, now: ContinuousClock.Instant) {
        var step = measured
        guard let reference else {
            adopt(step)
            // The CPU is the limit from the start (a fast local link, TLS): more would only cost.
            if step.busy {
                phase = .trimming
                lastReason = .cpuBound
                return
            }
            change(to: min(target * settings.firstMultiplier, maximum), .gain, now: now)
            if target == referenceCount { phase = .holding }
            return
        }
        // The CPU was busy at the new count, yet the throughput grew nearly as the count did (by 60 % of
        // it or more, over at least a doubling): the CPU did not hold the step back. What keeps it busy
        // scales with the bytes (a server on the same machine, the kernel's shaping and copies), so
        // the CPU is no reason to stop.
        if step.busy, target >= 2 * referenceCount,
            Self.grown(from: reference, at: referenceCount, to: step.total, at: target) >= 0.6
        {
            step.busy = false
        }
        // The CPU was the limit at the new count, yet the step paid all the same (by the whole gain):
        // the count before it is no level to go back to. Keep the step and see whether fewer do as
        // well, as from a held count that found the CPU busy.
        if step.busy, step.total >= reference * (1 + settings.gain) {
            limitIsShared = false
            self.reference = step.total
            referenceCount = target
            // Less than a second's worth left: a trim could not be measured before the end, and the
            // connections it retires are throughput the tail needs. Hold.
            if Double(remainingBytes) < step.total {
                phase = .holding
                heldSteps = 0
                trimQuietSteps = settings.probeInterval
                lastReason = .held
                return
            }
            phase = .trimming
            change(to: max(1, target * 3 / 4), .cpuBound, now: now)
            return
        }
        let (paid, free) = paid(step)
        // The connections there before kept what they had, yet the total did not grow: the newcomers
        // had not started (their first windows still on their way, TCP's slow start behind a queue).
        // Or they lost, and the newcomers brought less than half of what they lost: the loss was not
        // the newcomers' (the machine busy with something else for a moment: on a per-connection
        // link, 40 % of the 4's rate and nothing from the newcomers was read as a shared limit; on a
        // shared one the newcomers take what the others lose). Either tells nothing of the limit;
        // measure the step once more before judging it. (Not every step that did not pay: on a
        // capped link still in its slow start, the second look paid against the few's first
        // measurement, and a run ramped to 64 there.)
        let unstarted =
            free && !step.busy || step.total - step.incumbents < (reference - step.incumbents) / 2
        if unstarted, !paid, !remeasured {
            remeasured = true
            return
        }
        if paid {
            let before = referenceCount
            let kept = step.incumbents / max(reference, 1)
            limitIsShared = false
            adopt(step)
            // A step of many times the count whose newcomers took most of what the others had: a shared
            // limit lies between the two counts (a cap of twelve connections' worth pays the step from 8
            // to 64 by half, and leaves the 8 a fifth; a capped link still filling its first burst pays
            // the step from 4 to 32 by a third). Going on up would only add connections it does not
            // need, and no probe looks up from the maximum, so see now whether half as many hold the
            // throughput. (A busy machine takes a quarter or so from them on a per-connection limit.)
            // (With less than a second's worth left it holds: the tail needs what runs.)
            if kept < 0.5, target > 2 * before, target > settings.initial {
                guard Double(remainingBytes) >= step.total else { return holdToTheEnd() }
                sharedIfFewerHold = true
                return probeHalfAfterAStepOfEight(now: now)
            }
            guard target < maximum else { return holdToTheEnd() }
            // Connections that cost the others nothing: the limit is theirs alone, so go faster. So
            // too when the throughput grew nearly as the count did (by 60 % of it or more: a busy
            // machine takes from the others what a per-connection limit would not).
            let grown = Self.grown(from: reference, at: before, to: step.total, at: target)
            change(to: min(target * (free || grown >= 0.6 ? 8 : 2), maximum), .gain, now: now)
            return
        }
        // Less than a second's worth left: the throughput falls as the work runs out (the last
        // connections finish and leave), so a step that did not pay proves nothing. Hold what runs
        // (going back or probing down now would close connections the tail still needs).
        if Double(remainingBytes) < max(reference, step.total) { return holdToTheEnd() }
        // A step of eight times the count that raised the throughput, if by less than the gain: the
        // limit lies between the two counts, and the few before it did not fill it (a cap of twelve
        // connections' worth gives 8 most of it and 64 the rest). Back at the few, or half of them,
        // the step's gain would be lost until a probe found it again: see whether half the many hold
        // it, as when such a step paid, and come back up if not.
        if target > 2 * referenceCount, !step.busy, step.total >= reference * (1 + settings.tolerance) {
            limitIsShared = !free
            adopt(step)
            return probeHalfAfterAStepOfEight(now: now)
        }
        // The step up did not pay: back to the count before it, holding the better of the two
        // throughputs. When the CPU is the limit, every connection costs: see whether fewer do as well.
        // Shared, and filled by the few it started with (a capped link): where many connections fill
        // a shared limit, each one's share is small and its requests' cost shows.
        limitIsShared = !free && !step.busy
        self.reference = max(reference, step.total)
        if limitIsShared, referenceCount > 1 {
            // The few it started with already fill a shared limit: see whether half as many hold it
            // too (twice, as any probe), else back to them. Connections the limit does not need
            // only cost: the server's buffers and work, the bytes a crash or a cut throws away.
            phase = .probingDown
            paidSteps = 0
            downFromRamp = true
            change(to: max(1, referenceCount / 2), .probeDown, now: now)
            return
        }
        change(to: referenceCount, step.busy ? .cpuBound : .noGain, now: now)
        if step.busy {
            phase = .trimming
        } else {
            settle(now: now)
        }
    }

    mutating func trim(_ step: Step, now: ContinuousClock.Instant) {
        let throughput = step.total
        let reference = self.reference ?? throughput
        if target == referenceCount && lastReason != .trim {
            // The first step back at the count that worked. Far below the level it was measured at,
            // what was measured then was a moment (every connection's first burst) and not the link:
            // ramp on from here.
            if throughput < reference * settings.decline {
                adopt(step)
                phase = .ramping
                change(to: min(target * 2, maximum), .decline, now: now)
                return
            }
            // Otherwise it is the level to hold.
            self.reference = max(reference, throughput)
            guard target > 1 else { return settle(now: now) }
            change(to: max(1, target / 2), .trim, now: now)
            return
        }
        guard throughput >= reference * (1 - settings.tolerance) else {
            // With retiring connections still taking their share, a loss proves nothing yet: wait.
            if step.retiring { return }
            change(to: referenceCount, .trimLost, now: now)
            // Fewer lost: a busy CPU at this count is no reason to try fewer again at once.
            trimQuietSteps = settings.probeInterval
            return settle(now: now)
        }
        referenceCount = target
        // One halving is enough to shed the connections a shared limit does not need; more only when
        // the CPU is the limit (then every connection costs).
        guard target > 1, step.busy else { return settle(now: now) }
        change(to: max(1, target / 2), .trim, now: now)
    }

    mutating func hold(_ step: Step, now: ContinuousClock.Instant) {
        guard let reference = self.reference else {
            // The first measurement of a run started from what an earlier one learned: its connections
            // just opened, so it is a level to compare with, not yet a step held.
            adopt(step)
            return
        }
        heldSteps += 1
        if quietSteps > 0 { quietSteps -= 1 }
        if trimQuietSteps > 0 { trimQuietSteps -= 1 }
        if step.busy && target > 1 && trimQuietSteps == 0 {
            // Less than a second's worth left: a trim could not be measured before the end, and the
            // connections it retires are throughput the tail needs; nor is a busy CPU a time for more.
            guard Double(remainingBytes) >= step.total else { return }
            self.reference = step.total
            referenceCount = target
            phase = .trimming
            change(to: max(1, target * 3 / 4), .trim, now: now)
            return
        }
        // While connections just retired finish their windows, what the others do is no level: the
        // retiring ones still take their share of a shared link.
        if step.retiring { return }
        // Back from a probe for fewer that lost, the count before does no better than the fewer did:
        // what they lost against was a moment measured at the count before (a shaped link's first
        // burst: on a 50 MB/s cap, 32 connections measured in it held 32 for the rest of the download
        // against 16 that carried as much), not the connections. Fewer are tried again, once. Where it
        // does better, but the probe followed a step of many times the count (the limit lies between:
        // 4 → 32 gained a tenth), the first probe, two steps on, tries a third fewer against this
        // level: the loss may have been a noisy step's (16 carried 13 % less than 32 on the same cap).
        if let lost = lostDown {
            lostDown = nil
            if step.total <= lost.level * (1 + settings.tolerance), lost.count < target {
                self.reference = step.total
                referenceCount = target
                incumbents = step.workers
                paidSteps = 0
                sharedIfFewerHold = lost.shared
                downFromEight = lost.fromEight
                phase = .probingDown
                change(to: lost.count, .probeDown, now: now)
                return
            }
            if lost.fromEight {
                heldSteps = max(heldSteps, settings.probeInterval - 2)
                probesUp = 1
            }
        }
        // Near the end (less than two seconds' worth left) throughput falls as work runs out: no probe.
        let ending = Double(remainingBytes) < reference * 2
        let falling = step.total < reference * settings.decline && !ending
        if falling && heldSteps == 1 && target < maximum && !limitIsShared {
            // Far below the level just measured: that was a moment (every connection's first burst),
            // not the link. Ramp on from here. (Not on a limit found shared: more connections were
            // just shown not to raise it, and a shared link's queue swings that much on its own.)
            adopt(step)
            phase = .ramping
            change(to: min(target * 2, maximum), .decline, now: now)
            return
        }
        // The held level follows slow drift, so that a probe compares with the present.
        self.reference = falling ? reference : 0.75 * reference + 0.25 * step.total
        guard quietSteps == 0, !ending, falling || heldSteps >= settings.probeInterval else { return }
        // At the maximum there is no more to try, only fewer: a count reached by a step misread in
        // the link's first burst (64 on a capped link, each holding the server's buffers) is shed.
        let atMaximum = target >= maximum
        guard !atMaximum || (!falling && target > settings.initial) else { return }
        if falling { self.reference = step.total }
        referenceCount = target
        incumbents = step.workers
        paidSteps = 0
        // Every other probe looks down: a count that a lucky step raised past what the link needs
        // comes back once fewer connections do as well.
        if !falling, probesUp >= 1 || atMaximum, target > settings.initial {
            probesUp = 0
            phase = .probingDown
            change(to: max(settings.initial, target * 2 / 3), .probeDown, now: now)
            return
        }
        probesUp += 1
        // More must beat what the count does now: the held level, or the latest step if that was
        // better (a level still catching up from a slow first step would let any step look like a gain).
        self.reference = max(self.reference ?? 0, step.total)
        phase = .probing
        change(to: min(maximum, max(target + 1, target * 3 / 2)), falling ? .decline : .probe, now: now)
    }

    mutating func probe(_ step: Step, now: ContinuousClock.Instant) {
        let (paid, free) = paid(step)
        guard paid else {
            change(to: referenceCount, .probeLost, now: now)
            return settle(now: now)
        }
        paidSteps += 1
        guard paidSteps >= 2 else { return }
        limitIsShared = false
        adopt(step)
        phase = .ramping
        guard target < maximum else {
            phase = .holding
            heldSteps = 0
            return
        }
        change(to: min(target * (free ? 4 : 2), maximum), .gain, now: now)
    }

    /// Fewer connections held the throughput (within the tolerance, twice): keep fewer. Else back.
    mutating func probeDown(_ step: Step, now: ContinuousClock.Instant) {
        let reference = self.reference ?? step.total
        guard step.total >= reference * (1 - settings.tolerance) else {
            // With retiring connections still taking their share, a loss proves nothing yet: wait.
            if step.retiring { return }
            // A loss far smaller than the cut is looked at twice, as a hold is: the bytes that the
            // connections just closed had in flight (the server's socket buffers, a shaper's queue)
            // still take the link's capacity for a while (16 of 32 on a 50 MB/s cap carried 37 MB/s
            // in the first step after the cut, 50 in the next). A per-connection limit loses in
            // proportion to the cut, and is judged at once.
            let cut = 1 - Double(target) / Double(max(referenceCount, 1))
            let loss = 1 - step.total / max(reference, 1)
            if !lostOnce, loss < 0.75 * cut {
                lostOnce = true
                return
            }
            // Half as many, tried because a step up from the few did not pay, or because the few
            // seemed to lose most of what they had to a step of eight, lost in proportion to the cut
            // (within 15 % of it: a cap that 3.3 connections fill leaves 2 of 4 with 60 %, and a
            // shaped link's first burst ending takes more than the cut): each connection carries its
            // own, and the step was measured in a moment (the machine busy with something else slowed
            // every connection alike). Start the ramp over from the count before the cut. (Held there
            // as a shared limit, a per-connection link kept 4 of 64 connections to the end: 4.0 s for
            // a download of 0.45 s; 32, 0.98 s.) Once per download: a link that keeps contradicting
            // itself is held as any other.
            if downFromRamp || downFromEight {
                downFromRamp = false
                if !rampedAgain, loss >= 0.85 * cut, loss <= 1.15 * cut {
                    rampedAgain = true
                    endProbeDown()
                    limitIsShared = false
                    self.reference = nil
                    incumbents = []
                    phase = .ramping
                    change(to: referenceCount, .rampAgain, now: now)
                    return
                }
            }
            if !lostDownChecked {
                lostDownChecked = true
                lostDown = LostProbe(
                    count: target, level: step.total, shared: sharedIfFewerHold, fromEight: downFromEight)
            }
            sharedIfFewerHold = false
            downFromEight = false
            change(to: referenceCount, .probeLost, now: now)
            return settle(now: now)
        }
        lostOnce = false
        downFromRamp = false
        // Half as many after a step of eight did far better than the many (by the gain): the many were
        // measured in a moment (the machine busy with something else slows every connection alike,
        // so the few seemed to lose most of what they had to the newcomers), not at a shared limit,
        // where half as many carry what the many did. Ramp on from here. (Held as "fewer do as
        // well", a per-connection link went from 32 to 16, 10 and 6: 1.3 s for a download of 0.45 s.)
        if downFromEight, step.total >= reference * (1 + settings.gain) {
            endProbeDown()
            limitIsShared = false
            adopt(step)
            phase = .ramping
            change(to: min(target * 2, maximum), .fewerDidBetter, now: now)
            return
        }
        paidSteps += 1
        guard paidSteps >= 2 else { return }
        if sharedIfFewerHold {
            limitIsShared = true
            sharedIfFewerHold = false
        }
        downFromEight = false
        referenceCount = target
        lastReason = .probeDownHeld
        // Fewer did as well: try a third fewer again at once, against the same level, down to the
        // count a ramp starts with. A count that a misread step raised (64 on a capped link, where
        // the few it started with were still in their slow start) then comes down in a few steps;
        // one probe down per probe interval, every other probe, took it from 32 to 4 in ten probes,
        // longer than most downloads, each connection holding the server's buffers meanwhile.
        if target > settings.initial {
            paidSteps = 0
            change(to: max(settings.initial, target * 2 / 3), .probeDown, now: now)
            return
        }
        settle(now: now)
    }

    /// Forgets what the current probe down followed (a refusal, or a reading that ends it).
    mutating func endProbeDown() {
        downFromRamp = false
        downFromEight = false
        sharedIfFewerHold = false
    }

    /// Holds the count it has, as measured at the end of a ramp step.
    mutating func holdToTheEnd() {
        phase = .holding
        heldSteps = 0
        lastReason = .held
    }

    /// Tries half as many after a step of many times the count that passed a shared limit.
    mutating func probeHalfAfterAStepOfEight(now: ContinuousClock.Instant) {
        phase = .probingDown
        paidSteps = 0
        downFromEight = true
        change(to: max(settings.initial, target / 2), .probeDown, now: now)
    }

    mutating func settle(now: ContinuousClock.Instant) {
        phase = .holding
        heldSteps = 0
    }

    /// Moves to `count`; the next measurement starts once the change has had its warm-up.
    mutating func change(to count: Int, _ reason: Reason, now: ContinuousClock.Instant) {
        lastReason = reason
        remeasured = false
        lostOnce = false
        guard count != target else { return }
        target = count
        measureFrom = now + settings.warmUp
        base = nil
    }
}
