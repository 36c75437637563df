use ordo_threads::{EngineConfig, ProtocolKind, RunSpec, run};
use ordo_workload::smallbank::CONSERVED_MIX;
use ordo_workload::{Micro, MicroConfig, SmallBank, SmallBankConfig, Workload, Ycsb, YcsbConfig};
use std::sync::Arc;
use std::time::{Duration, Instant};
fn main() {
    let theta = 0.9;
    let ws: Vec<Arc<dyn Workload>> = vec![
        Arc::new(Micro::new(MicroConfig { keys: 200, theta, ..MicroConfig::default() }).unwrap()),
        Arc::new(SmallBank::new(SmallBankConfig { customers: 100, theta, ..SmallBankConfig::default() }).unwrap()),
        Arc::new(
            SmallBank::new(SmallBankConfig { customers: 50, theta, mix: CONSERVED_MIX, ..SmallBankConfig::default() })
                .unwrap(),
        ),
        Arc::new(Ycsb::new(YcsbConfig { records: 2000, theta, payload_bytes: 24, ..YcsbConfig::default() }).unwrap()),
    ];
    for w in &ws {
        for p in ProtocolKind::ALL {
            for reorder in [false, true] {
                if reorder && p == ProtocolKind::Serial {
                    continue;
                }
                let c = EngineConfig { protocol: p, reorder, threads: 2, payload_bytes: 24, ..EngineConfig::default() };
                let spec = RunSpec {
                    seed: 1,
                    warmup: Duration::ZERO,
                    duration: Duration::from_millis(40),
                    cooldown: Duration::ZERO,
                    record_history: true,
                };
                let t = Instant::now();
                let r = run(&c, w, &spec, |_, _| {}).unwrap();
                println!(
                    "{} {} commits {} aborts {} hist {} took {:?}",
                    w.name(),
                    c.label(),
                    r.recorder.commits(),
                    r.recorder.total_aborts(),
                    r.history.len(),
                    t.elapsed()
                );
            }
        }
    }
}
