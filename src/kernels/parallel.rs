//! ferrograd's own rayon pool and the fork-join on top of it.
//!
//! Kernels go parallel only through [`run`] and [`tasks`], so the size set by
//! `set_num_threads` is honoured, rayon's global pool is never started, and a
//! forked child (whose copy of the pool has no threads) simply builds a fresh
//! pool on first use.
//!
//! Most kernels last 5-500 us, so how fast a parallel region starts and ends
//! matters as much as the split. Entering a rayon pool from an outside thread
//! (`install`, `scope`) parks the caller on a condition variable and wakes it
//! when the pool is done: two context switches per region, measured at 5-10 us
//! each on a 2-core machine, which made a 64k-element add slower on two
//! threads than on one. So a region here works like an OpenMP team: the
//! calling thread takes a share of the tasks itself, helpers (long-lived tasks
//! running on the rayon pool's threads) spin for a short while between regions
//! so the next one finds them awake, and the caller waits for them by spinning,
//! never sleeping. A helper that sees no work for [`HOT`] returns its thread
//! to rayon, which lets it sleep.

use std::any::Any;
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::RwLock;
use rayon::{ThreadPool, ThreadPoolBuilder};

use crate::error::{Error, Result};

static POOL: RwLock<Option<Arc<ThreadPool>>> = RwLock::new(None);
static FORKED: AtomicBool = AtomicBool::new(false);

fn default_threads() -> usize {
    for var in ["FERROGRAD_NUM_THREADS", "OMP_NUM_THREADS"] {
        if let Some(n) = std::env::var(var)
            .ok()
            .and_then(|v| v.trim().parse::<usize>().ok())
        {
            if n > 0 {
                return n;
            }
        }
    }
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

fn build(n: usize) -> Result<Arc<ThreadPool>> {
    ThreadPoolBuilder::new()
        .num_threads(n)
        .thread_name(|i| format!("ferrograd-{i}"))
        .build()
        .map(Arc::new)
        .map_err(|e| Error::runtime(format!("could not start {n} worker threads: {e}")))
}

fn pool() -> Option<Arc<ThreadPool>> {
    if FORKED.swap(false, Ordering::AcqRel) {
        // The inherited pool's threads do not exist in this process; leak it
        // rather than ask its (absent) workers to shut down.
        if let Some(old) = POOL.write().take() {
            std::mem::forget(old);
        }
    }
    if let Some(p) = POOL.read().as_ref() {
        return Some(p.clone());
    }
    let mut w = POOL.write();
    if w.is_none() {
        *w = build(default_threads()).ok();
    }
    w.clone()
}

/// Number of threads parallel kernels use.
pub fn get_num_threads() -> usize {
    pool().map_or(1, |p| p.current_num_threads())
}

pub fn set_num_threads(n: usize) -> Result<()> {
    if n == 0 {
        return Err(Error::runtime("set_num_threads expects a positive integer"));
    }
    let new = build(n)?;
    *POOL.write() = Some(new);
    Ok(())
}

/// Runs a parallel section of `work` elements. `f` receives the number of
/// threads to split for: the pool's size when the work is big enough to pay
/// for going parallel, else 1. Inside, split with [`tasks`].
#[inline]
pub fn run<R>(work: usize, f: impl FnOnce(usize) -> R) -> R {
    if work < super::GRAIN || IN_TASK.get() {
        return f(1);
    }
    f(get_num_threads())
}

/// Called in a forked child (registered with `pthread_atfork`).
pub fn mark_forked() {
    FORKED.store(true, Ordering::Release);
    // The helpers were threads of the parent; none exist here.
    TEAM.hot.store(0, Ordering::Release);
    TEAM.job.store(std::ptr::null_mut(), Ordering::Release);
    TEAM.users.store(0, Ordering::Release);
    TEAM.busy.store(false, Ordering::Release);
}

// ----- the team ---------------------------------------------------------------

/// How long an idle helper stays awake waiting for the next region.
const HOT: Duration = Duration::from_micros(300);

thread_local! {
    /// Set while a thread runs a task, so nested regions run inline.
    static IN_TASK: Cell<bool> = const { Cell::new(false) };
}

/// One parallel region: `count` tasks handed out by `next`.
struct Job {
    run: *const (dyn Fn(usize) + Sync),
    count: usize,
    next: AtomicUsize,
    left: AtomicUsize,
    panic: parking_lot::Mutex<Option<Box<dyn Any + Send>>>,
}

impl Job {
    /// Claims and runs tasks until none are left.
    fn work(&self) {
        let was = IN_TASK.replace(true);
        loop {
            let t = self.next.fetch_add(1, Ordering::Relaxed);
            if t >= self.count {
                break;
            }
            // SAFETY: `run` outlives the region: the caller waits for every
            // task and every helper (`users`) before its stack frame ends.
            let f = unsafe { &*self.run };
            if let Err(p) = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(t))) {
                self.panic.lock().get_or_insert(p);
            }
            self.left.fetch_sub(1, Ordering::AcqRel);
        }
        IN_TASK.set(was);
    }
}

struct Team {
    /// The region in progress, or null.
    job: AtomicPtr<Job>,
    /// Bumped for every region, so a spinning helper notices new work.
    epoch: AtomicU64,
    /// Helpers that may be looking at `job`; the caller waits for zero.
    users: AtomicUsize,
    /// Helpers currently running (spinning or working).
    hot: AtomicUsize,
    /// One region at a time; a second concurrent caller runs inline.
    busy: AtomicBool,
}

static TEAM: Team = Team {
    job: AtomicPtr::new(std::ptr::null_mut()),
    epoch: AtomicU64::new(0),
    users: AtomicUsize::new(0),
    hot: AtomicUsize::new(0),
    busy: AtomicBool::new(false),
};

/// A helper's life on a pool thread: join regions as they come, leave after
/// [`HOT`] without one.
fn helper() {
    // Not a real epoch, so the region this helper was started for is joined.
    let mut seen = u64::MAX;
    let mut idle_since = Instant::now();
    let mut spins = 0u32;
    loop {
        let epoch = TEAM.epoch.load(Ordering::Acquire);
        if epoch != seen {
            seen = epoch;
            // Announce before reading the pointer: the caller clears `job`
            // and then waits for `users` to drain, so a pointer read here is
            // valid until the matching decrement.
            TEAM.users.fetch_add(1, Ordering::SeqCst);
            let job = TEAM.job.load(Ordering::SeqCst);
            if !job.is_null() {
                // SAFETY: see above.
                unsafe { (*job).work() };
            }
            TEAM.users.fetch_sub(1, Ordering::SeqCst);
            idle_since = Instant::now();
            spins = 0;
            continue;
        }
        std::hint::spin_loop();
        spins += 1;
        if spins.is_multiple_of(64) && idle_since.elapsed() > HOT {
            // A region that starts just as this helper leaves still finishes:
            // its caller runs every task nobody else claims.
            TEAM.hot.fetch_sub(1, Ordering::SeqCst);
            return;
        }
    }
}

/// Runs `f(0)`, ..., `f(count - 1)`, spread over the calling thread and the
/// pool's helpers. Tasks must not depend on each other's order. A panic in a
/// task is re-raised here, on the calling thread, after the region ends.
pub fn tasks(count: usize, f: impl Fn(usize) + Sync) {
    let threads = if count > 1 && !IN_TASK.get() {
        get_num_threads()
    } else {
        1
    };
    if threads <= 1
        || TEAM
            .busy
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
    {
        let was = IN_TASK.replace(true);
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| (0..count).for_each(&f)));
        IN_TASK.set(was);
        if let Err(p) = r {
            std::panic::resume_unwind(p);
        }
        return;
    }
    let run: &(dyn Fn(usize) + Sync) = &f;
    // SAFETY: erases the borrow's lifetime; the job is unpublished and every
    // helper has let go of it (`users == 0`) before this function returns.
    let run: *const (dyn Fn(usize) + Sync + 'static) = unsafe { std::mem::transmute(run) };
    let job = Job {
        run,
        count,
        next: AtomicUsize::new(0),
        left: AtomicUsize::new(count),
        panic: parking_lot::Mutex::new(None),
    };
    TEAM.job
        .store(&job as *const Job as *mut Job, Ordering::SeqCst);
    TEAM.epoch.fetch_add(1, Ordering::SeqCst);
    // Wake helpers only when too few are hot; a hot one has seen the epoch.
    let want = (threads - 1).min(count - 1);
    let hot = TEAM.hot.load(Ordering::SeqCst);
    if hot < want {
        if let Some(p) = pool() {
            for _ in hot..want {
                TEAM.hot.fetch_add(1, Ordering::SeqCst);
                p.spawn(helper);
            }
        }
    }
    job.work();
    let mut spins = 0u32;
    while job.left.load(Ordering::Acquire) != 0 {
        std::hint::spin_loop();
        spins = spins.wrapping_add(1);
        if spins.is_multiple_of(1024) {
            std::thread::yield_now();
        }
    }
    TEAM.job.store(std::ptr::null_mut(), Ordering::SeqCst);
    while TEAM.users.load(Ordering::SeqCst) != 0 {
        std::hint::spin_loop();
    }
    TEAM.busy.store(false, Ordering::Release);
    let panic = job.panic.lock().take();
    if let Some(p) = panic {
        std::panic::resume_unwind(p);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU64;

    fn sum_of_squares(n: usize) -> u64 {
        let total = AtomicU64::new(0);
        tasks(n, |t| {
            total.fetch_add((t * t) as u64, Ordering::Relaxed);
        });
        total.into_inner()
    }

    #[test]
    fn every_task_runs_once_from_many_threads_at_once() {
        set_num_threads(2).unwrap();
        let want = |n: u64| (0..n).map(|t| t * t).sum::<u64>();
        std::thread::scope(|s| {
            for k in 0..4 {
                s.spawn(move || {
                    for round in 0..200 {
                        let n = 1 + (round * 7 + k) % 50;
                        assert_eq!(sum_of_squares(n), want(n as u64));
                    }
                });
            }
        });
    }

    #[test]
    fn a_panicking_task_reaches_the_caller_and_the_team_recovers() {
        set_num_threads(2).unwrap();
        let r = std::panic::catch_unwind(|| {
            tasks(8, |t| {
                if t == 5 {
                    panic!("task five");
                }
            })
        });
        let msg = r.unwrap_err();
        assert_eq!(msg.downcast_ref::<&str>(), Some(&"task five"));
        assert_eq!(sum_of_squares(10), 285);
    }

    #[test]
    fn nested_regions_run_inline() {
        set_num_threads(2).unwrap();
        let total = AtomicU64::new(0);
        tasks(4, |_| {
            tasks(4, |u| {
                total.fetch_add(u as u64, Ordering::Relaxed);
            })
        });
        assert_eq!(total.into_inner(), 24);
    }
}
