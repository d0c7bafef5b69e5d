//! An HSA agent as Metron knows it: what the interception, the counters and the device list
//! share (the interception finds them, `intercept::agents`).

use crate::sys::Handle;

/// An HSA agent.
#[derive(Clone, Debug)]
pub struct Agent {
    /// `hsa_agent_t` handle.
    pub handle: Handle,
    /// A GPU (else a CPU or other device).
    pub gpu: bool,
    /// Index among the GPU agents (Metron's device index).
    pub device: u32,
    /// Architecture (`HSA_AGENT_INFO_NAME`, e.g. `gfx90a`).
    pub arch: String,
    /// Product name (`HSA_AMD_AGENT_INFO_PRODUCT_NAME`), else the architecture.
    pub name: String,
}
