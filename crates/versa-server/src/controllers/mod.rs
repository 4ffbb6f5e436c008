//! The background work of a replica: following the stored definitions and serving them
//! ([`definitions`], which every replica runs; what a definition's status should be is
//! [`definition_status`]), following the admission configuration
//! ([`admission`], every replica too), and the work that must happen once — definition
//! status, cleanup of deleted definitions, storage [`migration`], the judgement of stored
//! objects after a definition change ([`stored_objects`]), standalone's [`namespaces`],
//! [`service_accounts`], [`garbage_collector`] and [`rbac`] (default policy, aggregation; whose
//! writes go through the API, [`loopback`]) —
//! which runs only in the term of the replica elected by [`crate::leader`]. [`names`] is the
//! definitions controller's index of the names each group's definitions hold, [`echoes`] its
//! own status writes, recognised when they come back.

pub mod admission;
pub mod definition_status;
pub mod definitions;
pub mod echoes;
pub mod garbage_collector;
pub mod loopback;
pub mod migration;
pub mod names;
pub mod namespaces;
pub mod rbac;
pub mod service_accounts;
pub mod stored_objects;
