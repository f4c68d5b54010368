//! Moving due values: the transfer script and the scheduler task, many queues in one group,
//! the head window and the position index, short calls on big queues.

mod discovery;
mod groups;
mod long_scripts;
mod orphans;
mod task;
mod transfer;
mod transfer_head;
mod transfer_index;
