//! The wasmtime engines adapters run on, and how components get compiled.
//!
//! Two tiers ([`Tier`]): Cranelift's optimized code, what serves normally and what the compile
//! cache keeps, and Winch's baseline code, compiled in one pass in less time (a quarter of
//! Cranelift's with nothing cached), which a hot swap serves until Cranelift's is ready. Each tier is an engine with its own linker; both
//! have epoch interruption driven by one ticker thread, and a linker with the `pixgw:psp` imports
//! plus WASI reduced to nothing (no files, environment or sockets). Each engine allocates
//! instances from a pool of its own (pre-reserved slots, so a fresh store per call costs
//! microseconds).
//! Compiled components are cached on disk by content hash, so a restart skips Cranelift, and
//! compiled functions are cached one by one ([`FunctionCache`]), so a new version of an adapter
//! recompiles only what changed; [`compile_cache`] keeps the directory within its budget.
//! Compiles run on a thread pool of their own ([`COMPILE_THREADS_PER_CORE`]).

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use sha2::{Digest, Sha256};
use wasmtime::component::{Component, HasSelf, Linker};
use wasmtime::{
    Config, Enabled, Engine, InstanceAllocationStrategy, OptLevel, PoolingAllocationConfig,
    Strategy,
};

use super::bindings;
use super::call::CallState;
use super::compile_cache;
use super::function_cache::FunctionCache;

/// How often the epoch advances; deadlines are checked at this granularity.
pub const EPOCH_TICK: Duration = Duration::from_millis(10);

/// Bytes of each memory and table slot kept resident between calls: about what an adapter call
/// touches.
const KEEP_RESIDENT: usize = 1 << 20;

/// Threads of the compile pool per core. Cranelift compiles a component's functions in parallel
/// (rayon). A hot swap under load competes for the cores with every thread serving requests (and,
/// on PostgreSQL, the server's backends), and the kernel shares them out per runnable thread: with
/// one thread per core the compile got a small share and the new version served late. Measured
/// with `cargo xtask load` on 2 cores (14 s runs, the swap's time to serve) under PostgreSQL
/// load: one thread per core 394–580 ms (median 456 of eight runs), two 266–373 (median 335 of
/// four), three 284–408 (median 327 of eight). The price is paid idle, where the threads preempt
/// each other: sixteen swaps in two idle demos each, 109–169 ms (median 128) against 100–136
/// (median 108) with one thread per core.
const COMPILE_THREADS_PER_CORE: usize = 2;

/// Gives the memory a compile freed on this thread back to the operating system.
///
/// mimalloc keeps a thread's freed pages for that thread's next allocations and returns them
/// when the thread allocates or frees again; a compile-pool thread is idle from one compile to
/// the next, so what Cranelift freed stayed resident. Measured with `cargo xtask load --backend
/// sqlite` after a start with an empty compile cache (thirteen adapters compiled), two runs
/// each: the gateway's anonymous resident memory under load 65–67 MB against 90, its peak
/// before the run 89–91 MB against 112, during it (the swap's compile included) 118–119 MB
/// against 137–139. With the cache full (nothing compiled at the start) 36 MB and 95 MB either
/// way.
fn return_freed_memory() {
    // SAFETY: `mi_collect` takes no pointers; it frees nothing still allocated.
    unsafe { libmimalloc_sys::mi_collect(true) }
}

/// Resource limits applied to every adapter call.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Linear memory one instance may hold, all its memories together.
    pub memory_bytes: usize,
    /// Wall-clock time one call may take, PSP round trips included.
    pub call_deadline: Duration,
    /// Calls running at once; more wait for a slot.
    pub max_concurrent_calls: u32,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            memory_bytes: 64 << 20,
            call_deadline: Duration::from_secs(45),
            max_concurrent_calls: 256,
        }
    }
}

/// Which compiler made the code an adapter version runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Tier {
    /// Winch's single pass: ready sooner than Cranelift's, slower to run. A hot swap serves it
    /// until the optimized code is ready.
    Baseline,
    /// Cranelift's: what serves once compiled, and what the compile cache keeps.
    Optimized,
}

/// One tier's engine and the linker of the imports adapters get on it.
pub(super) struct Compiler {
    pub(super) engine: Engine,
    pub(super) linker: Linker<CallState>,
}

impl Compiler {
    fn new(config: &Config) -> anyhow::Result<Compiler> {
        let engine = Engine::new(config).map_err(|e| anyhow::anyhow!("{e}"))?;
        let mut linker = Linker::<CallState>::new(&engine);
        wasmtime_wasi::p2::add_to_linker_async(&mut linker).map_err(|e| anyhow::anyhow!("{e}"))?;
        bindings::Adapter::add_to_linker::<CallState, HasSelf<CallState>>(&mut linker, |s| s)
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        Ok(Compiler { engine, linker })
    }
}

pub struct AdapterEngine {
    pub(super) optimized: Compiler,
    pub(super) baseline: Compiler,
    pub(super) limits: Limits,
    cache: Option<DiskCache>,
    /// Where Cranelift's parallel work runs ([`COMPILE_THREADS_PER_CORE`]).
    compile_pool: rayon::ThreadPool,
    ticker_stop: Arc<AtomicBool>,
}

/// The compile cache directory, its function entries, and the thread that keeps it.
struct DiskCache {
    dir: PathBuf,
    functions: Arc<FunctionCache>,
    upkeep: compile_cache::Upkeep,
}

impl AdapterEngine {
    pub fn new(limits: Limits, cache_dir: Option<PathBuf>) -> anyhow::Result<AdapterEngine> {
        let mut pool = PoolingAllocationConfig::default();
        let slots = limits.max_concurrent_calls;
        // A Rust wasm32-wasip2 component holds a handful of core instances and memories (the
        // program and the WASI adapter); leave headroom, plus slots for manifest validation.
        pool.total_component_instances(slots + 16)
            .total_core_instances((slots + 16) * 8)
            .total_memories((slots + 16) * 4)
            .total_tables((slots + 16) * 8)
            .total_stacks(slots + 16)
            .max_core_instances_per_component(16)
            .max_memories_per_component(4)
            .max_tables_per_component(16)
            .max_memory_size(limits.memory_bytes)
            // A finished call's slot is reset by zeroing the pages it dirtied, found with
            // PAGEMAP_SCAN (Linux 6.7+), rather than by an madvise per call: that flushes every
            // core's TLB (an interrupt each) and the next call faults the pages back in.
            .linear_memory_keep_resident(KEEP_RESIDENT)
            .table_keep_resident(KEEP_RESIDENT)
            .pagemap_scan(Enabled::Auto)
            // What still goes back to the kernel goes in batches.
            .decommit_batch_size(16);
        let mut config = Config::new();
        config
            .wasm_component_model(true)
            .epoch_interruption(true)
            // Small reservations keep the address space modest; adapters are small.
            .memory_reservation(limits.memory_bytes as u64)
            .memory_guard_size(64 << 10)
            .memory_reservation_for_growth(0)
            .max_wasm_stack(1 << 20)
            .async_stack_size(2 << 20);
        let mut baseline = config.clone();
        // Winch compiles the adapter's functions; the trampolines between them and the host are
        // still Cranelift's, compiled without optimizations: the code serves for moments. (Not
        // Cranelift's single-pass register allocator, which wasmtime does not support for
        // security-sensitive use.) Its instances come from a pool of their own, as Cranelift's
        // do: made on demand, each call mapped its memories and its stack and unmapped them
        // after, every unmapping interrupting each core to flush its TLB, and a charge on
        // Winch's code cost 190 µs against 109 pooled (`adapter_call/efi_create_charge_baseline`).
        baseline
            .strategy(Strategy::Winch)
            .cranelift_opt_level(OptLevel::None)
            .allocation_strategy(InstanceAllocationStrategy::Pooling(pool.clone()));
        let baseline = Compiler::new(&baseline)?;
        config
            .strategy(Strategy::Cranelift)
            .allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
        let cache = match cache_dir {
            Some(dir) => {
                std::fs::create_dir_all(&dir)?;
                Some(DiskCache {
                    functions: Arc::new(FunctionCache::on_disk(&dir)?),
                    upkeep: compile_cache::Upkeep::start(dir.clone())?,
                    dir,
                })
            }
            None => None,
        };
        let functions = match &cache {
            Some(cache) => cache.functions.clone(),
            None => Arc::new(FunctionCache::in_memory()),
        };
        config
            .enable_incremental_compilation(functions)
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        let optimized = Compiler::new(&config)?;

        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let compile_pool = rayon::ThreadPoolBuilder::new()
            .num_threads(cores * COMPILE_THREADS_PER_CORE)
            .thread_name(|i| format!("pixgw-compile-{i}"))
            .build()?;

        let ticker_stop = Arc::new(AtomicBool::new(false));
        let engines = [optimized.engine.weak(), baseline.engine.weak()];
        let stop = ticker_stop.clone();
        std::thread::Builder::new()
            .name("pixgw-epoch".into())
            .spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    std::thread::sleep(EPOCH_TICK);
                    for weak in &engines {
                        match weak.upgrade() {
                            Some(engine) => engine.increment_epoch(),
                            None => return,
                        }
                    }
                }
            })?;

        Ok(AdapterEngine {
            optimized,
            baseline,
            limits,
            cache,
            compile_pool,
            ticker_stop,
        })
    }

    pub(super) fn compiler(&self, tier: Tier) -> &Compiler {
        match tier {
            Tier::Baseline => &self.baseline,
            Tier::Optimized => &self.optimized,
        }
    }

    /// The optimized component compiled earlier from `bytes`, if the compile cache holds it.
    /// Blocking: call it off the async threads.
    pub fn cached(&self, bytes: &[u8]) -> Option<Component> {
        let cache = self.cache.as_ref()?;
        let path = self.artifact_path(cache, bytes);
        // Read into memory rather than mmap the file: something truncating a mapped artifact
        // would crash the gateway with SIGBUS.
        let artifact = std::fs::read(&path).ok()?;
        // SAFETY: the file was written by `Component::serialize` of an engine with the same
        // compatibility hash (part of the file name), in a directory only pixgw writes;
        // wasmtime still checks its header and version before using it.
        match unsafe { Component::deserialize(&self.optimized.engine, &artifact) } {
            Ok(component) => {
                cache.upkeep.after_compile(vec![path], 0);
                Some(component)
            }
            Err(e) => {
                tracing::warn!(path = %path.display(), error = %e, "discarding unusable compiled artifact");
                None
            }
        }
    }

    /// Winch's compile of `bytes`, not cached (Winch takes no incremental cache; the optimized
    /// code that follows is what the cache keeps). Blocking and CPU-heavy.
    pub fn compile_baseline(&self, bytes: &[u8]) -> anyhow::Result<Component> {
        self.compile_in_pool(Tier::Baseline, bytes)
    }

    /// Compiles `bytes` to optimized code, or loads the artifact compiled earlier from the same
    /// bytes by this same engine configuration. Blocking and CPU-heavy: call it off the async
    /// threads.
    pub fn compile(&self, bytes: &[u8]) -> anyhow::Result<Component> {
        let Some(cache) = &self.cache else {
            return self.compile_in_pool(Tier::Optimized, bytes);
        };
        if let Some(component) = self.cached(bytes) {
            return Ok(component);
        }
        let path = self.artifact_path(cache, bytes);
        let compiled = self.compile_in_pool(Tier::Optimized, bytes);
        let mut activity = cache.functions.take_activity();
        if let Ok(component) = &compiled {
            match component.serialize() {
                Ok(artifact) => {
                    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
                    match std::fs::write(&tmp, &artifact).and_then(|_| std::fs::rename(&tmp, &path))
                    {
                        Ok(()) => activity.written += artifact.len() as u64,
                        Err(e) => {
                            tracing::warn!(path = %path.display(), error = %e, "could not cache compiled artifact")
                        }
                    }
                }
                Err(e) => tracing::warn!(error = %e, "could not serialize compiled artifact"),
            }
        }
        // The functions it found cached are marked used, and older versions' files may go now
        // that it wrote new ones: after this returns, so the new version does not wait.
        cache.upkeep.after_compile(activity.used, activity.written);
        compiled
    }

    /// `tier`'s compile of `bytes`; its parallel work runs on the compile pool (rayon runs a
    /// parallel iterator on the pool of the thread that starts it), whose threads then give
    /// back what it freed, after the caller has its component.
    fn compile_in_pool(&self, tier: Tier, bytes: &[u8]) -> anyhow::Result<Component> {
        let compiled = self
            .compile_pool
            .install(|| Component::new(&self.compiler(tier).engine, bytes))
            .map_err(|e| anyhow::anyhow!("{e}"));
        self.compile_pool.spawn_broadcast(|_| return_freed_memory());
        compiled
    }

    /// Where the optimized artifact of `bytes` is cached.
    fn artifact_path(&self, cache: &DiskCache, bytes: &[u8]) -> PathBuf {
        cache
            .dir
            .join(format!("{}.cwasm", self.artifact_key(bytes)))
    }

    fn artifact_key(&self, bytes: &[u8]) -> String {
        use std::hash::{Hash, Hasher};
        let mut engine_hash = std::collections::hash_map::DefaultHasher::new();
        self.optimized
            .engine
            .precompile_compatibility_hash()
            .hash(&mut engine_hash);
        format!(
            "{}-{:016x}",
            hex::encode(Sha256::digest(bytes)),
            engine_hash.finish()
        )
    }
}

impl Drop for AdapterEngine {
    fn drop(&mut self) {
        self.ticker_stop.store(true, Ordering::Relaxed);
    }
}
