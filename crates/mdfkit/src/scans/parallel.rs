//! The parallel task runner of table scans: tasks (runs of a partition's pages) decoded on
//! several threads, their output handed back on the calling thread in task order, with bounded
//! memory. It knows threads and channels only; what a task does is the caller's
//! ([`crate::table_scan`]).

use crate::error::{Error, Result};
use crate::page::PageId;
use crate::scan::{Flow, MappedPages, ScanStats};

/// A task's work: decodes its pages, handing each piece of output to the sender (which answers
/// false when nobody wants more), and returns the task's statistics.
pub(crate) type TaskWork<'a, T> = dyn Fn(&[PageId], &mut dyn FnMut(T) -> bool) -> Result<ScanStats> + Sync + 'a;

/// What a parallel scan task sends its consumer: its output, piece by piece (with its weight),
/// then how it ended; and a worker, when the walk handed out no task after its last.
enum TaskMessage<T> {
    Output(T, usize),
    Done(Result<ScanStats>),
    NoMoreTasks,
}

/// A task a worker is given: its pages, or the error the walk of the pages met there.
enum TaskInput {
    Pages(Vec<PageId>),
    Failed(Error),
}

/// Hands each task's pages, in order, to a callback that answers false when no more are wanted.
type TaskWalk<'a> = Box<dyn FnOnce(&mut dyn FnMut(&[PageId]) -> bool) -> Result<()> + Send + 'a>;

/// A scan's tasks, runs of [`PAGES_PER_TASK`] pages in order: a split's own list of pages, or the
/// pages an allocation unit maps, handed out as the scan goes ([`MappedPages`]: a bit a page
/// held, not a list of them, so a table of any size is scanned in the same memory).
pub(crate) struct Tasks<'a> {
    /// Pages there are at most (a page several IAM pages map counted for each).
    pages_at_most: usize,
    /// Tasks there are at most.
    at_most: usize,
    walk: TaskWalk<'a>,
}

impl<'a> Tasks<'a> {
    /// `pages`, `per_task` a task.
    pub(crate) fn listed(pages: &'a [PageId], per_task: usize) -> Self {
        Tasks {
            pages_at_most: pages.len(),
            at_most: pages.len().div_ceil(per_task),
            walk: Box::new(move |each| {
                let _ = pages.chunks(per_task).all(each);
                Ok(())
            }),
        }
    }

    /// Pages there are at most.
    pub(crate) fn pages_at_most(&self) -> usize {
        self.pages_at_most
    }

    /// No pages at all.
    pub(crate) fn is_empty(&self) -> bool {
        self.at_most == 0
    }

    /// The pages `pages` hands out, `per_task` a task.
    pub(crate) fn mapped(pages: MappedPages<'a>, per_task: usize) -> Self {
        Tasks {
            pages_at_most: pages.len_at_most(),
            at_most: pages.len_at_most().div_ceil(per_task),
            walk: Box::new(move |each| {
                let mut task = Vec::with_capacity(per_task);
                let mut wanted = true;
                pages.try_for_each(|id| {
                    task.push(id);
                    if task.len() == per_task {
                        wanted = each(&task);
                        task.clear();
                    }
                    Ok(if wanted { Flow::Continue } else { Flow::Stop })
                })?;
                if wanted && !task.is_empty() {
                    each(&task);
                }
                Ok(())
            }),
        }
    }
}

/// Output bytes a worker may hold that the consumer has not taken (besides the piece it is
/// making): a few batches or text chunks of a 64-page task each.
const AHEAD_BYTES: usize = 4 << 20;

/// Bytes one thread has handed another and the other has not yet taken, bounded: the sender
/// waits for room. (A scan worker's output the consumer has not taken; Arrow columns a Parquet
/// export's encoders have not encoded.)
pub(crate) struct Backlog {
    /// Bytes the sender may have outstanding, besides one piece of any size.
    limit: usize,
    /// Bytes outstanding, and whether the taker has gone.
    held: std::sync::Mutex<(usize, bool)>,
    /// Signalled when the taker takes a piece or goes.
    room: std::sync::Condvar,
}

impl Backlog {
    pub(crate) fn new(limit: usize) -> Self {
        Backlog { limit, held: std::sync::Mutex::new((0, false)), room: std::sync::Condvar::new() }
    }

    /// Waits until `bytes` more fit within the limit (or nothing is outstanding), then counts
    /// them; false once the taker has gone.
    pub(crate) fn make_room(&self, bytes: usize) -> bool {
        let mut held = self.held.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        while !held.1 && held.0 > 0 && held.0.saturating_add(bytes) > self.limit {
            held = self.room.wait(held).unwrap_or_else(std::sync::PoisonError::into_inner);
        }
        held.0 += bytes;
        !held.1
    }

    /// The taker took a piece of `bytes`.
    pub(crate) fn taken(&self, bytes: usize) {
        let mut held = self.held.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        held.0 = held.0.saturating_sub(bytes);
        self.room.notify_one();
    }

    /// The taker has gone: a sender waiting for room, and every later one, is answered false.
    pub(crate) fn close(&self) {
        self.held.lock().unwrap_or_else(std::sync::PoisonError::into_inner).1 = true;
        self.room.notify_all();
    }
}

/// Tells every worker, when dropped, that the consumer has gone.
struct Closing<'a>(&'a [Backlog]);

impl Drop for Closing<'_> {
    fn drop(&mut self) {
        self.0.iter().for_each(Backlog::close);
    }
}

/// Runs `work` over `tasks` (pages of the table called `table`, `schema.name`) on up to `threads`
/// threads (no more than there can be tasks: an idle thread costs more than it saves) and hands
/// what it sends to `deliver`, in task order; adds each task's statistics to `total`, and names
/// the table in a task's error (or in the error the walk of the pages met). Returns false when
/// `deliver` wanted no more.
///
/// A thread of its own walks the pages and gives task i to worker i % workers, one waiting a
/// worker at most; each worker runs its tasks in order, and the consumer reads task i from
/// worker i % workers, so output comes back in page order. A worker may hold up to [`AHEAD_BYTES`] of
/// output (as `weigh` counts it) that the consumer has not taken, or one piece of any size, and
/// waits beyond that: memory stays bounded (LOB tables make batches large), while a worker whose
/// turn has not come keeps decoding through a scheduler's time slice of its sibling (with one
/// piece at most, the 2-core machine kept 1.6 of its cores busy exporting `Wide` to Parquet).
/// With one worker (a single task: most small tables) the tasks run on this thread, without a
/// thread and a channel.
pub(crate) fn run_in_task_order<T: Send>(
    table: &str,
    tasks: Tasks<'_>,
    threads: usize,
    work: &TaskWork<'_, T>,
    weigh: &(dyn Fn(&T) -> usize + Sync),
    deliver: &mut dyn FnMut(T) -> Result<bool>,
    total: &mut ScanStats,
) -> Result<bool> {
    let workers = threads.min(tasks.at_most);
    if workers <= 1 {
        let mut outcome = Ok(true);
        let walked = (tasks.walk)(&mut |pages| {
            let mut wanted = Ok(true);
            let result = work(pages, &mut |output| {
                wanted = deliver(output);
                matches!(wanted, Ok(true))
            });
            outcome = match (wanted, result) {
                (Ok(true), Ok(stats)) => {
                    *total += stats;
                    Ok(true)
                }
                (Ok(true), Err(e)) => Err(e.in_object(table)),
                (wanted, _) => wanted,
            };
            matches!(outcome, Ok(true))
        });
        let finished = outcome?;
        walked.map_err(|e| e.in_object(table))?;
        return Ok(finished);
    }
    let ahead: Vec<Backlog> = (0..workers).map(|_| Backlog::new(AHEAD_BYTES)).collect();
    std::thread::scope(|scope| -> Result<bool> {
        // Whatever way the consumer leaves (done, wanting no more, an error), no worker waits on;
        // a worker that leaves drops its tasks, and the walk stops at the next it hands it.
        let _closing = Closing(&ahead);
        let mut task_senders = Vec::with_capacity(workers);
        let receivers: Vec<_> = (0..workers)
            .map(|w| {
                let (task_tx, task_rx) = std::sync::mpsc::sync_channel::<TaskInput>(1);
                task_senders.push(task_tx);
                let (tx, rx) = std::sync::mpsc::channel::<TaskMessage<T>>();
                let ahead = &ahead[w];
                scope.spawn(move || {
                    for input in task_rx {
                        let result = match input {
                            TaskInput::Pages(pages) => work(&pages, &mut |output| {
                                let bytes = weigh(&output);
                                ahead.make_room(bytes) && tx.send(TaskMessage::Output(output, bytes)).is_ok()
                            }),
                            TaskInput::Failed(e) => Err(e),
                        };
                        let failed = result.is_err();
                        if tx.send(TaskMessage::Done(result)).is_err() || failed {
                            return;
                        }
                    }
                    let _ = tx.send(TaskMessage::NoMoreTasks);
                });
                rx
            })
            .collect();
        let walk = tasks.walk;
        scope.spawn(move || {
            let mut task = 0;
            let walked = walk(&mut |pages| {
                let given = task_senders[task % workers].send(TaskInput::Pages(pages.to_vec())).is_ok();
                task += 1;
                given
            });
            if let Err(e) = walked {
                let _ = task_senders[task % workers].send(TaskInput::Failed(e));
            }
        });
        let mut task = 0;
        loop {
            let (rx, ahead) = (&receivers[task % workers], &ahead[task % workers]);
            loop {
                match rx.recv() {
                    Ok(TaskMessage::Output(output, bytes)) => {
                        ahead.taken(bytes);
                        if !deliver(output)? {
                            return Ok(false);
                        }
                    }
                    Ok(TaskMessage::Done(result)) => {
                        *total += result.map_err(|e| e.in_object(table))?;
                        break;
                    }
                    Ok(TaskMessage::NoMoreTasks) => return Ok(true),
                    Err(_) => return Err(Error::corrupt("a scan thread stopped without a result")),
                }
            }
            task += 1;
        }
    })
}

/// Pages one parallel task decodes (512 KB).
pub(crate) const PAGES_PER_TASK: usize = 64;

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicI64, Ordering};

    /// One page a task, numbered by task.
    fn pages(tasks: u32) -> Vec<PageId> {
        (0..tasks).map(|t| PageId::new(1, t)).collect()
    }

    #[test]
    fn output_comes_back_in_task_order_and_workers_hold_what_fits() {
        let pages = pages(40);
        let tasks = || Tasks::listed(&pages, 1);
        // Three pieces a task, each a third of what a worker may hold and a byte: two fit.
        let weight = AHEAD_BYTES / 3 + 1;
        let (held, most) = (AtomicI64::new(0), AtomicI64::new(0));
        let work = |pages: &[PageId], send: &mut dyn FnMut(u32) -> bool| {
            for piece in 0..3 {
                if !send(pages[0].page * 3 + piece) {
                    break;
                }
                most.fetch_max(held.fetch_add(1, Ordering::SeqCst) + 1, Ordering::SeqCst);
            }
            Ok(ScanStats { rows: 3, ..ScanStats::default() })
        };
        let mut got = Vec::new();
        let mut deliver = |piece: u32| {
            held.fetch_sub(1, Ordering::SeqCst);
            // A slow consumer: the workers fill what they may hold.
            std::thread::sleep(std::time::Duration::from_millis(2));
            got.push(piece);
            Ok(true)
        };
        let mut total = ScanStats::default();
        let weigh = |_: &u32| weight;
        assert!(run_in_task_order("dbo.t", tasks(), 2, &work, &weigh, &mut deliver, &mut total).unwrap());
        assert_eq!(got, (0..120).collect::<Vec<_>>());
        assert_eq!(total.rows, 120);
        // Two a worker, and the piece the consumer is taking (counted here until `deliver` runs).
        let most = most.load(Ordering::SeqCst);
        assert!((3..=5).contains(&most), "{most} pieces sent and not yet delivered at once, not 3 to 5");
    }

    #[test]
    fn a_sender_waiting_for_room_is_answered_when_the_taker_goes() {
        let backlog = Backlog::new(10);
        assert!(backlog.make_room(8));
        std::thread::scope(|scope| {
            // 8 + 8 do not fit: it waits until the taker goes (or finds it gone).
            let waiting = scope.spawn(|| backlog.make_room(8));
            backlog.close();
            assert!(!waiting.join().unwrap());
        });
        assert!(!backlog.make_room(1));
    }

    #[test]
    fn a_consumer_that_stops_leaves_no_worker_waiting() {
        let pages = pages(64);
        let tasks = || Tasks::listed(&pages, 1);
        let work = |pages: &[PageId], send: &mut dyn FnMut(u32) -> bool| {
            (0..100).all(|piece| send(pages[0].page * 100 + piece));
            Ok(ScanStats::default())
        };
        // Every piece fills what a worker may hold: the workers wait for the consumer.
        let weigh = |_: &u32| AHEAD_BYTES;
        let mut total = ScanStats::default();
        let mut taken = 0;
        let mut enough = |_| {
            taken += 1;
            Ok(taken < 5)
        };
        assert!(!run_in_task_order("dbo.t", tasks(), 3, &work, &weigh, &mut enough, &mut total).unwrap());
        let mut failing = |_| Err(Error::corrupt("the consumer failed"));
        let e = run_in_task_order("dbo.t", tasks(), 3, &work, &weigh, &mut failing, &mut total).unwrap_err();
        assert!(e.to_string().contains("the consumer failed"), "{e}");
    }
}
