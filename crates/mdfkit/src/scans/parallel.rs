//! The parallel task runner of table scans: tasks (runs of a partition's pages) decoded on
//! several threads, their output handed back on the calling thread in task order, with bounded
//! memory. It knows threads and channels only; what a task does is the caller's
//! ([`crate::table_scan`]).

use crate::catalog::model::TableInfo;
use crate::error::{Error, Result};
use crate::page::PageId;
use crate::scan::ScanStats;

/// A task's work: decodes its pages, handing each piece of output to the sender (which answers
/// false when nobody wants more), and returns the task's statistics.
pub(crate) type TaskWork<'a, T> = dyn Fn(&[PageId], &mut dyn FnMut(T) -> bool) -> Result<ScanStats> + Sync + 'a;

/// What a parallel scan task sends its consumer: its output, piece by piece, then how it ended.
enum TaskMessage<T> {
    Output(T),
    Done(Result<ScanStats>),
}

/// Runs `work` over `tasks` (pages of `table`) on up to `threads` threads (no more than there are
/// tasks: an idle thread costs more than it saves) and hands what it sends to `deliver`, in task
/// order; adds each task's statistics to `total`, and names the table in a task's error. Returns
/// false when `deliver` wanted no more.
///
/// Worker `w` runs tasks w, w + workers, ... in order and hands its output over a channel of one:
/// a worker ahead of the consumer waits instead of piling up output (LOB tables make batches
/// large). The consumer reads task i from worker i % workers, so output comes back in page order.
/// With one worker (a single task: most small tables) the tasks run on this thread, without a
/// thread and a channel.
pub(crate) fn run_in_task_order<T: Send>(
    table: &TableInfo,
    tasks: &[&[PageId]],
    threads: usize,
    work: &TaskWork<'_, T>,
    deliver: &mut dyn FnMut(T) -> Result<bool>,
    total: &mut ScanStats,
) -> Result<bool> {
    let workers = threads.min(tasks.len());
    if workers <= 1 {
        for pages in tasks {
            let mut wanted = Ok(true);
            let result = work(pages, &mut |output| {
                wanted = deliver(output);
                matches!(wanted, Ok(true))
            });
            if !wanted? {
                return Ok(false);
            }
            *total += result.map_err(|e| e.in_object(table.qualified_name()))?;
        }
        return Ok(true);
    }
    std::thread::scope(|scope| -> Result<bool> {
        let receivers: Vec<_> = (0..workers)
            .map(|w| {
                let (tx, rx) = std::sync::mpsc::sync_channel::<TaskMessage<T>>(1);
                scope.spawn(move || {
                    for pages in tasks.iter().skip(w).step_by(workers) {
                        let result = work(pages, &mut |output| tx.send(TaskMessage::Output(output)).is_ok());
                        let failed = result.is_err();
                        if tx.send(TaskMessage::Done(result)).is_err() || failed {
                            break;
                        }
                    }
                });
                rx
            })
            .collect();
        for task in 0..tasks.len() {
            let rx = &receivers[task % workers];
            loop {
                match rx.recv() {
                    Ok(TaskMessage::Output(output)) => {
                        if !deliver(output)? {
                            return Ok(false);
                        }
                    }
                    Ok(TaskMessage::Done(result)) => {
                        *total += result.map_err(|e| e.in_object(table.qualified_name()))?;
                        break;
                    }
                    Err(_) => return Err(Error::corrupt("a scan thread stopped without a result")),
                }
            }
        }
        Ok(true)
    })
}

/// Pages one parallel task decodes (512 KB).
pub(crate) const PAGES_PER_TASK: usize = 64;
