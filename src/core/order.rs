//! Work spread over a thread pool, its results taken in order.

use std::collections::BTreeMap;

/// Runs `work` on the rayon pool of `scope` for every item `feed` pushes, and hands the results
/// to `sink` on this thread, in the order of the items, each as soon as it and every item before
/// it are done. At most `window` items are between pushed and handed over: pushing waits for
/// room, so memory stays bounded whatever the number of items.
///
/// When `sink` fails, nothing more is pushed (`feed` gets the error back) and its error is
/// returned; when `feed` fails, what it pushed before is still handed over.
pub fn in_order<'s, T, R, E>(
    scope: &rayon::Scope<'s>,
    window: usize,
    work: &'s (dyn Fn(T) -> R + Sync),
    feed: impl FnOnce(&mut dyn FnMut(T) -> Result<(), E>) -> Result<(), E>,
    mut sink: impl FnMut(R) -> Result<(), E>,
) -> Result<(), E>
where
    T: Send + 's,
    R: Send + 's,
{
    let window = window.max(1);
    let (tx, rx) = std::sync::mpsc::channel();
    let mut done = Reorder {
        rx,
        pending: BTreeMap::new(),
        next: 0,
    };
    let mut pushed: usize = 0;
    let mut stopped = false;
    let fed = feed(&mut |item| {
        if let Err(e) = done.hand_over((pushed + 1).saturating_sub(window), &mut sink) {
            stopped = true;
            return Err(e);
        }
        let tx = tx.clone();
        let i = pushed;
        scope.spawn(move |_| {
            // A panic is carried over to this thread rather than leave it waiting.
            let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| work(item)));
            // Only fails once this thread has stopped listening.
            let _ = tx.send((i, result));
        });
        pushed += 1;
        Ok(())
    });
    if stopped {
        return fed;
    }
    done.hand_over(pushed, &mut sink)?;
    fed
}

/// Results that arrived out of order, waiting for their turn.
struct Reorder<R> {
    rx: std::sync::mpsc::Receiver<(usize, std::thread::Result<R>)>,
    pending: BTreeMap<usize, R>,
    /// The next item to hand over.
    next: usize,
}

impl<R> Reorder<R> {
    /// Hands every result that is ready in turn to `sink`, waiting until the first `until` items
    /// have been handed over.
    fn hand_over<E>(
        &mut self,
        until: usize,
        sink: &mut impl FnMut(R) -> Result<(), E>,
    ) -> Result<(), E> {
        loop {
            while let Ok(got) = self.rx.try_recv() {
                self.arrived(got);
            }
            while let Some(ready) = self.pending.remove(&self.next) {
                self.next += 1;
                sink(ready)?;
            }
            if self.next >= until {
                return Ok(());
            }
            let got = match rayon::yield_local() {
                // A pool thread must not block while work it queued waits in its own queue: it
                // does that work itself.
                Some(rayon::Yield::Executed) => continue,
                // Not a pool thread, or one with an empty queue: every item still out is being
                // worked on elsewhere, so waiting for it is safe.
                None | Some(rayon::Yield::Idle) => self.rx.recv().ok(),
            };
            match got {
                Some(got) => self.arrived(got),
                // Every sender is gone (cannot happen while `in_order` holds one).
                None => return Ok(()),
            }
        }
    }

    fn arrived(&mut self, (i, result): (usize, std::thread::Result<R>)) {
        match result {
            Ok(r) => {
                self.pending.insert(i, r);
            }
            Err(panic) => std::panic::resume_unwind(panic),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;
    use std::time::Duration;

    use super::*;

    fn pool(threads: usize) -> rayon::ThreadPool {
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap()
    }

    /// Later items of each group of 8 finish first, so results arrive out of order.
    fn slow_first(i: usize) -> usize {
        std::thread::sleep(Duration::from_micros(((8 - i % 8) * 200) as u64));
        i * 2
    }

    #[test]
    fn hands_results_over_in_order_and_within_the_window() {
        for threads in [1, 2, 4] {
            let pushed = Cell::new(0);
            let handed = Cell::new(0);
            let mut got = Vec::new();
            let result: Result<(), ()> = pool(threads).in_place_scope(|scope| {
                in_order(
                    scope,
                    3,
                    &slow_first,
                    |push| {
                        (0..50).try_for_each(|i| {
                            assert!(pushed.get() - handed.get() <= 3);
                            push(i)?;
                            pushed.set(pushed.get() + 1);
                            Ok(())
                        })
                    },
                    |r| {
                        got.push(r);
                        handed.set(handed.get() + 1);
                        Ok(())
                    },
                )
            });
            assert_eq!(result, Ok(()));
            assert_eq!(got, (0..50).map(|i| i * 2).collect::<Vec<_>>());
        }
    }

    #[test]
    fn waits_without_blocking_its_own_pool() {
        // The waiting thread is the pool's only worker: it must run the queued items itself.
        let mut got = Vec::new();
        let result: Result<(), ()> = pool(1).install(|| {
            rayon::in_place_scope(|scope| {
                in_order(
                    scope,
                    4,
                    &slow_first,
                    |push| (0..20).try_for_each(push),
                    |r| {
                        got.push(r);
                        Ok(())
                    },
                )
            })
        });
        assert_eq!(result, Ok(()));
        assert_eq!(got.len(), 20);
    }

    #[test]
    fn a_failing_sink_stops_the_feed() {
        let pushed = Cell::new(0);
        let result = pool(2).in_place_scope(|scope| {
            in_order(
                scope,
                4,
                &slow_first,
                |push| {
                    (0..100).try_for_each(|i| {
                        pushed.set(pushed.get() + 1);
                        push(i)
                    })
                },
                |r| if r == 10 { Err(r) } else { Ok(()) },
            )
        });
        assert_eq!(result, Err(10));
        assert!(pushed.get() < 100);
    }

    #[test]
    fn a_failing_feed_still_hands_over_what_it_pushed() {
        let mut got = Vec::new();
        let result = pool(2).in_place_scope(|scope| {
            in_order(
                scope,
                4,
                &slow_first,
                |push| {
                    (0..10).try_for_each(&mut *push)?;
                    Err("listing failed")
                },
                |r| {
                    got.push(r);
                    Ok(())
                },
            )
        });
        assert_eq!(result, Err("listing failed"));
        assert_eq!(got, (0..10).map(|i| i * 2).collect::<Vec<_>>());
    }
}
