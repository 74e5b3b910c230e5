use std::alloc::{GlobalAlloc, Layout};
use std::process::ExitCode;

use clap::Parser;
use rewind::{Cli, ExitStatus, run};

fn main() -> ExitCode {
    let cli = Cli::parse();
    let color = cli.color.enabled_on_stderr();
    match run(cli) {
        Ok(status) => status.into(),
        Err(err) if err.is_broken_pipe() => ExitStatus::Clean.into(),
        Err(err) => {
            rewind::print_error(&err, color);
            ExitStatus::Error.into()
        }
    }
}

#[cfg(feature = "mimalloc")]
#[global_allocator]
static GLOBAL: Bounded<mimalloc::MiMalloc> = Bounded(mimalloc::MiMalloc);

#[cfg(not(feature = "mimalloc"))]
#[global_allocator]
static GLOBAL: Bounded<std::alloc::System> = Bounded(std::alloc::System);

/// The allocator, wrapped so that running out of memory (an address-space limit, a container's
/// memory limit without overcommit) ends the run with one line and exit status 2, as any input
/// rewind cannot handle does, instead of Rust's abort (exit 134 and a backtrace).
struct Bounded<A>(A);

// SAFETY: every call is passed to the wrapped allocator unchanged; a null pointer from it (the
// only thing added here) never returns to the caller.
unsafe impl<A: GlobalAlloc> GlobalAlloc for Bounded<A> {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's guarantees, passed on.
        checked(unsafe { self.0.alloc(layout) })
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's guarantees, passed on.
        checked(unsafe { self.0.alloc_zeroed(layout) })
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's guarantees, passed on.
        unsafe { self.0.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller's guarantees, passed on.
        checked(unsafe { self.0.realloc(ptr, layout, new_size) })
    }
}

fn checked(ptr: *mut u8) -> *mut u8 {
    if ptr.is_null() {
        if OUT_OF_MEMORY.swap(true, std::sync::atomic::Ordering::SeqCst) {
            // Another thread ran out too and is writing the line: it ends the process.
            wait_for_the_end();
        }
        out_of_memory();
    }
    ptr
}

/// Whether a thread has run out of memory: the first one writes the line, so that threads
/// failing together (workers of one pool) do not write it once each.
static OUT_OF_MEMORY: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Waits, allocating nothing, for the thread that writes the line to end the process.
#[cfg(unix)]
fn wait_for_the_end() -> ! {
    loop {
        // SAFETY: `pause` only suspends the thread until a signal comes.
        unsafe {
            libc::pause();
        }
    }
}

#[cfg(not(unix))]
fn wait_for_the_end() -> ! {
    loop {
        std::thread::sleep(std::time::Duration::from_secs(1));
    }
}

/// Writes one line to standard error and exits 2, allocating nothing (the allocator just failed)
/// and running nothing at exit that could.
#[cfg(unix)]
fn out_of_memory() -> ! {
    const LINE: &[u8] = b"error: out of memory: the input needs more memory than this process may use (exit status 2)\n";
    // SAFETY: `write` reads LINE's bytes, which live for the whole program; `_exit` ends the
    // process without returning.
    unsafe {
        libc::write(2, LINE.as_ptr().cast(), LINE.len());
        libc::_exit(2)
    }
}

#[cfg(not(unix))]
fn out_of_memory() -> ! {
    use std::io::Write;
    let _ = std::io::stderr().write_all(
        b"error: out of memory: the input needs more memory than this process may use (exit status 2)\n",
    );
    std::process::exit(2)
}
