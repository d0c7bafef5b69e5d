//! `metron::set_collecting` (what `metron_stop()` / `metron_start()` call) tells the GPU
//! backend, which switches CUPTI's records and callbacks off and on with it (the NVIDIA
//! backend's `set_collecting`; checked on the device with tests/cuda/metron_toggle.cu). Here a
//! backend's hook stands in for CUPTI: it must see every change, in order, and only changes
//! that reach it through the public switch.

use std::sync::Mutex;

static SEEN: Mutex<Vec<bool>> = Mutex::new(Vec::new());

fn hook(on: bool) {
    SEEN.lock().unwrap().push(on);
}

#[test]
fn the_gpu_backend_follows_collection_off_and_on() {
    metron::gpu::on_collecting(hook);
    metron::set_collecting(false);
    metron::set_collecting(true);
    metron::set_collecting(false);
    metron::set_collecting(true);
    assert_eq!(*SEEN.lock().unwrap(), vec![false, true, false, true]);
}
