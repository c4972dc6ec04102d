import Foundation
import Testing

@testable import Fastpull
@testable import FastpullEngine

/// The transfer engine in the simulator: for every modelled link, `auto` under the stated model (the
/// default) and under the measured rules it replaces, against the best fixed connection count (the
/// oracle) and the ideal.
@Suite("The engine in the simulator", .serialized)
struct SimulatorTests {
    /// The default takes at most 1.1 × the best fixed count's time on every model.
    @Test(arguments: SimulatedModels.all.map(\.name))
    func theDefaultIsWithinTenPercentOfTheBestFixedCount(name: String) async throws {
        let model = try #require(SimulatedModels.all.first { $0.name == name })
        let traced = ProcessInfo.processInfo.environment["FASTPULL_SIMULATOR_TRACE"] == name
        // Seconds of computation: on a thread of its own, never holding the cooperative pool that every
        // other test's downloads need.
        let (automatic, modelled, best) = await Self.offPool {
            () -> (Simulator.Result, Simulator.Result, (count: Int, result: Simulator.Result)?) in
            var simulator = Simulator(model: model, mode: .automatic)
            simulator.traced = traced
            let automatic = simulator.run()
            var modelSimulator = Simulator(model: model, mode: .model)
            modelSimulator.traced =
                ProcessInfo.processInfo.environment["FASTPULL_SIMULATOR_TRACE_MODEL"] == name
            let modelled = modelSimulator.run()
            var best: (count: Int, result: Simulator.Result)?
            for count in SimulatedModels.fixedCounts {
                let fixed = Simulator(model: model, mode: .fixed(count)).run()
                if fixed.finished, best == nil || fixed.seconds < best!.result.seconds {
                    best = (count, fixed)
                }
            }
            return (automatic, modelled, best)
        }
        let oracle = try #require(best)
        let ratio = automatic.seconds / oracle.result.seconds
        let ideal = automatic.seconds / model.idealSeconds(connections: 64)
        print(
            "simulator | \(name) | auto \(automatic) | best fixed -n \(oracle.count): \(oracle.result) | "
                + "÷ oracle \(String(format: "%.3f", ratio)) | ÷ ideal \(String(format: "%.2f", ideal))")
        print(
            "simulator-model | \(name) | model \(modelled) | ÷ oracle \(String(format: "%.3f", modelled.seconds / oracle.result.seconds)) | rules ÷ oracle \(String(format: "%.3f", ratio))"
        )
        #expect(automatic.finished)
        #expect(ratio <= 1.1, "auto \(automatic) against -n \(oracle.count) \(oracle.result)")
        // The stated model (the default), side by side with the rules it replaces.
        #expect(modelled.finished)
        #expect(
            modelled.seconds / oracle.result.seconds <= 1.1,
            "model \(modelled) against -n \(oracle.count) \(oracle.result)")
        // Polite by construction: a shared cap draws no more than twice the start (the first step).
        if SimulatedModels.capNeeds[name] != nil {
            let start = ConnectionController.Settings(
                roundTrip: .nanoseconds(Int64(model.roundTrip * 1e9)),
                requestCost: .nanoseconds(Int64((model.roundTrip + model.serverCost) * 1e9))
            ).initial
            #expect(modelled.peakConnections <= 2 * start, "model \(modelled)")
        }
    }

    /// A connection that goes silent mid-answer costs the download a fraction of a second, not the
    /// stall timeout (10 s): the same link without the silence, side by side, in simulated time.
    @Test func aSilentConnectionCostsAFractionOfASecond() async throws {
        let silent = try #require(SimulatedModels.all.first { $0.name == "a connection goes silent" })
        var plain = silent
        plain.name = "the same link, no connection silent"
        plain.perConnection = { _, _ in 10 * 1_000_000 }
        let twin = plain
        let (withSilence, without) = await Self.offPool {
            (Simulator(model: silent, mode: .model).run(), Simulator(model: twin, mode: .model).run())
        }
        print("simulator | silent connection | \(withSilence) | without: \(without)")
        #expect(withSilence.finished && without.finished)
        #expect(withSilence.seconds - without.seconds < 0.25, "\(withSilence) against \(without)")
    }

    /// Two sources of different kinds, each counted on its own: the shared one keeps the few it needs
    /// and the per-connection one gets the rest, so both together beat the faster one alone, in
    /// either order; the one count the rules keep for the download does not.
    @Test(arguments: [false, true])
    func twoSourcesOfDifferentKindsBeatTheFasterOneAlone(sharedFirst: Bool) async throws {
        let both = SimulatedModels.twoSources(name: "two sources", sharedFirst: sharedFirst)
        let alone = SimulatedModels.fasterSourceAlone
        let (together, single, rules, fixedAlone) = await Self.offPool {
            (
                Simulator(model: both, mode: .model).run(), Simulator(model: alone, mode: .model).run(),
                Simulator(model: both, mode: .automatic).run(),
                Simulator(model: alone, mode: .fixed(64)).run()
            )
        }
        print(
            "simulator | two sources | both \(together) | A alone \(single) | A alone -n 64 \(fixedAlone) | rules, both \(rules)"
        )
        #expect(together.finished && single.finished)
        #expect(together.seconds < single.seconds, "both \(together) against A alone \(single)")
        #expect(
            together.seconds < fixedAlone.seconds, "both \(together) against A alone at -n 64 \(fixedAlone)")
        // B, the shared one, needs one connection: it peaks at the first step and ends with a few.
        let shared = sharedFirst ? 0 : 1
        let perConnection = 1 - shared
        #expect((together.finalBySource[shared] ?? .max) <= 2, "\(together.finalBySource)")
        #expect((together.peakBySource[shared] ?? .max) <= 8, "\(together.peakBySource)")
        #expect((together.finalBySource[perConnection] ?? 0) >= 60, "\(together.finalBySource)")
    }

    /// Runs `work` on a new thread and returns its result without holding a pool thread.
    static func offPool<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in
            Thread { continuation.resume(returning: work()) }.start()
        }
    }
}
