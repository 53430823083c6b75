//! Scenario 15: a primary down for a while, with traffic spread over the outage (time
//! compressed: a 3 s outage, a 1 s cooldown, a request every 300 ms).

use std::time::Duration;

use faultline::Fault;
use tokio::time::Instant;

use crate::support::{upstream, Conf, Gateway};

/// The breaker's clock has millisecond resolution: an opening stamped at `t` ms admits a
/// probe at `t + cooldown` ms, which can be up to 1 ms sooner in real time.
const CLOCK_GRAIN: Duration = Duration::from_millis(1);

/// 15. Primary down for a while, 20 requests spread over the outage → every request
/// answered, at most one probe per cooldown while down, and the primary back in use
/// within one cooldown (plus one request interval) of recovering.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s15_an_outage_is_ridden_out_with_one_probe_per_cooldown() {
    let outage = Duration::from_secs(3);
    let cooldown = Duration::from_secs(1);
    let interval = Duration::from_millis(300);
    let up = upstream().await;
    let conf = Conf::new(&up)
        .primary("max_attempts = 1")
        .route("retry = { max_attempts = 2, base_delay = \"10ms\", max_delay = \"50ms\", max_retry_after = \"5s\" }")
        .route("breaker = { failure_threshold = 1, cooldown = \"1s\", max_cooldown = \"1s\" }");
    let gw = Gateway::start(&conf).await;
    let down_from = up.elapsed();
    up.script("primary", Fault::down_for(outage));
    let recovered = down_from + outage; // at the latest: faultline's clock is ahead
    let t0 = Instant::now();
    let mut providers = Vec::new();
    for i in 0..20u32 {
        tokio::time::sleep_until(t0 + interval * i).await;
        let r = gw.chat(&format!("s15-{i}")).await;
        r.assert_canonical();
        providers.push(r.header("x-switchyard-provider").to_owned());
    }
    let p = up.attempts("primary");
    let (down, healthy): (Vec<_>, Vec<_>) = p.iter().partition(|a| a.fault != Fault::Ok);
    assert!(down.iter().all(|a| a.fault == Fault::status(503)));
    assert!(
        down.len() >= 2,
        "the primary was probed during the outage: {p:#?}"
    );
    for w in down.windows(2) {
        let gap = w[1].at - w[0].at;
        assert!(
            gap + CLOCK_GRAIN >= cooldown,
            "two primary calls {gap:?} apart while down"
        );
    }
    let back = healthy
        .first()
        .expect("the primary is used again after the outage")
        .at;
    let late = back.saturating_sub(recovered);
    assert!(
        late <= cooldown + interval + Duration::from_millis(500),
        "the primary came back {late:?} after recovering"
    );
    // from the first healthy answer on, the primary serves everything
    let first_primary = providers
        .iter()
        .position(|p| p == "primary")
        .expect("served by the primary again");
    assert!(
        providers[first_primary..].iter().all(|p| p == "primary"),
        "{providers:?}"
    );
    assert!(providers[first_primary..].len() >= 3, "{providers:?}");
    assert_eq!(p.len(), down.len() + providers[first_primary..].len());
    assert_eq!(gw.provider_health("primary").await["state"], "closed");
}
