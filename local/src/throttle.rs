//! API Gateway's throttling, locally: a token bucket per route setting of the template (the
//! grab route's, the withdrawal route's and the limits route's `RouteSettings`, and
//! `DefaultRouteSettings` shared by the other routes), refilled
//! at its rate limit up to its burst limit. A request that finds its bucket empty never reaches
//! the authorizer or the function: the gateway answers 429 `{"message":"Too Many Requests"}`
//! itself, which openapi.yaml's `GatewayMessage` describes and the app's own 429 codes
//! (`too_many_attempts`, `daily_limit`) never look like.

use std::sync::Mutex;
use std::time::Instant;

use red_packets::config::ConfigError;
use red_packets::routes::{Throttle as RouteThrottle, LIMITS_BURST_LIMIT, LIMITS_RATE_LIMIT};
use red_packets::settings::{self, Setting};

/// One route setting's bucket: `rate` tokens a second, at most `burst` held.
#[derive(Debug)]
pub struct TokenBucket {
    rate_per_second: f64,
    burst: f64,
    state: Mutex<(f64, Instant)>,
}

impl TokenBucket {
    /// A full bucket.
    pub fn new(rate_per_second: f64, burst: u32) -> Self {
        let burst = f64::from(burst);
        TokenBucket { rate_per_second, burst, state: Mutex::new((burst, Instant::now())) }
    }

    /// Takes a token if there is one.
    pub fn try_take(&self) -> bool {
        let mut state = self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let (tokens, refilled) = &mut *state;
        let now = Instant::now();
        *tokens = (*tokens + now.duration_since(*refilled).as_secs_f64() * self.rate_per_second).min(self.burst);
        *refilled = now;
        if *tokens >= 1.0 {
            *tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

/// The stage's throttling: the grab route's bucket, the withdrawal route's, the limits route's
/// (its numbers the template's), and the other routes' one.
#[derive(Debug)]
pub struct Throttle {
    grab: TokenBucket,
    withdraw: TokenBucket,
    limits: TokenBucket,
    other: TokenBucket,
}

impl Throttle {
    /// The template's throttles, each from its local stand-in (`LOCAL_GRAB_RATE_LIMIT`, …),
    /// whose default is the template parameter's (`GrabRateLimit`, …; `shared/core/src/settings.rs`).
    pub fn from_env() -> Result<Self, ConfigError> {
        let read = |setting: &Setting| -> Result<u32, ConfigError> {
            let value = setting.number_from_env()?;
            u32::try_from(value).map_err(|_| ConfigError::new(setting.name, value.to_string(), "too large"))
        };
        Ok(Throttle::new(
            (read(&settings::LOCAL_GRAB_RATE_LIMIT)?.into(), read(&settings::LOCAL_GRAB_BURST_LIMIT)?),
            (read(&settings::LOCAL_WITHDRAW_RATE_LIMIT)?.into(), read(&settings::LOCAL_WITHDRAW_BURST_LIMIT)?),
            (read(&settings::LOCAL_API_RATE_LIMIT)?.into(), read(&settings::LOCAL_API_BURST_LIMIT)?),
        ))
    }

    /// Buckets of `(rate per second, burst)` for the grab route, the withdrawal route and the others.
    pub fn new(grab: (f64, u32), withdraw: (f64, u32), other: (f64, u32)) -> Self {
        Throttle {
            grab: TokenBucket::new(grab.0, grab.1),
            withdraw: TokenBucket::new(withdraw.0, withdraw.1),
            limits: TokenBucket::new(LIMITS_RATE_LIMIT.into(), LIMITS_BURST_LIMIT),
            other: TokenBucket::new(other.0, other.1),
        }
    }

    /// True when a request on a route of `setting` may go on.
    pub fn admits(&self, setting: RouteThrottle) -> bool {
        match setting {
            RouteThrottle::Grab => self.grab.try_take(),
            RouteThrottle::Withdraw => self.withdraw.try_take(),
            RouteThrottle::Limits => self.limits.try_take(),
            RouteThrottle::Default => self.other.try_take(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bucket_gives_its_burst_then_refuses_until_it_refills() {
        let bucket = TokenBucket::new(1000.0, 3);
        assert_eq!((0..5).filter(|_| bucket.try_take()).count(), 3);
        std::thread::sleep(std::time::Duration::from_millis(5));
        assert!(bucket.try_take(), "refilled at 1000 a second");
        let dry = TokenBucket::new(0.0, 1);
        assert!(dry.try_take() && !dry.try_take());
    }

    #[test]
    fn the_grab_and_withdrawal_routes_have_buckets_of_their_own() {
        let throttle = Throttle::new((0.0, 1), (0.0, 1), (0.0, 2));
        assert!(throttle.admits(RouteThrottle::Grab));
        assert!(!throttle.admits(RouteThrottle::Grab));
        assert!(throttle.admits(RouteThrottle::Withdraw));
        assert!(!throttle.admits(RouteThrottle::Withdraw));
        assert!(throttle.admits(RouteThrottle::Default) && throttle.admits(RouteThrottle::Default));
        assert!(!throttle.admits(RouteThrottle::Default));
    }
}
