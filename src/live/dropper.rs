//! Dropping a replaced snapshot off the hot path: freeing a big session's
//! graph and record lists takes tens of milliseconds at millions of records,
//! time the TUI or `watch` should spend showing the new one.

use std::any::Any;
use std::sync::mpsc::{self, Sender};
use std::sync::{Mutex, OnceLock};

type Garbage = Box<dyn Any + Send>;

/// Drops `value` on a background thread (started on first use); inline if
/// that thread cannot be started or has gone.
pub fn drop_later<T: Send + 'static>(value: T) {
    static TX: OnceLock<Option<Mutex<Sender<Garbage>>>> = OnceLock::new();
    let tx = TX.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<Garbage>();
        std::thread::Builder::new()
            .name("worldline-drop".into())
            .spawn(move || rx.into_iter().for_each(drop))
            .ok()
            .map(|_| Mutex::new(tx))
    });
    let garbage: Garbage = Box::new(value);
    if let Some(tx) = tx {
        if let Ok(tx) = tx.lock() {
            // A send fails only if the thread is gone: drop it here then.
            let _ = tx.send(garbage);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    #[test]
    fn the_value_is_dropped_on_another_thread() {
        struct Probe(Arc<Mutex<Option<std::thread::ThreadId>>>);
        impl Drop for Probe {
            fn drop(&mut self) {
                *self.0.lock().unwrap() = Some(std::thread::current().id());
            }
        }
        let seen = Arc::new(Mutex::new(None));
        drop_later(Probe(seen.clone()));
        let until = Instant::now() + Duration::from_secs(10);
        while seen.lock().unwrap().is_none() && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(5));
        }
        let by = *seen.lock().unwrap();
        assert!(by.is_some_and(|id| id != std::thread::current().id()));
    }
}
