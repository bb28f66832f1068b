//! Raw N-API helpers of the hand-written callbacks (hot.rs, quota.rs): numeric arguments in, a
//! number out, and errors thrown as napi-rs's derive functions throw them.

use std::ffi::CStr;
use std::ptr;

use napi::sys;

pub(super) unsafe fn throw(env: sys::napi_env, code: &CStr, msg: &str) -> sys::napi_value {
    let msg = std::ffi::CString::new(msg.replace('\0', " ")).unwrap_or_default();
    sys::napi_throw_error(env, code.as_ptr(), msg.as_ptr());
    ptr::null_mut()
}

unsafe fn number_expected(env: sys::napi_env) -> sys::napi_value {
    throw(
        env,
        c"NumberExpected",
        "Failed to convert napi value into rust type `f64`",
    )
}

pub(super) unsafe fn panicked(
    env: sys::napi_env,
    e: Box<dyn std::any::Any + Send>,
) -> sys::napi_value {
    let msg = match (e.downcast_ref::<String>(), e.downcast_ref::<&str>()) {
        (Some(s), _) => s.clone(),
        (_, Some(s)) => (*s).to_owned(),
        _ => "panic from Rust code".to_owned(),
    };
    // Dropping a payload may itself panic; leak it rather than unwind into Node.
    std::mem::forget(e);
    throw(env, c"GenericFailure", &msg)
}

/// Reads `N` numeric arguments; `None` after throwing NumberExpected.
#[inline]
pub(super) unsafe fn numbers<const N: usize>(
    env: sys::napi_env,
    info: sys::napi_callback_info,
) -> Option<[f64; N]> {
    let mut argc = N;
    let mut argv = [ptr::null_mut(); N];
    let status = sys::napi_get_cb_info(
        env,
        info,
        &mut argc,
        argv.as_mut_ptr(),
        ptr::null_mut(),
        ptr::null_mut(),
    );
    if status != sys::Status::napi_ok {
        throw(
            env,
            c"GenericFailure",
            "Failed to initialize napi function call.",
        );
        return None;
    }
    let mut out = [0f64; N];
    for i in 0..N {
        // Missing arguments read as undefined, which is not a number: NumberExpected.
        if sys::napi_get_value_double(env, argv[i], &mut out[i]) != sys::Status::napi_ok {
            number_expected(env);
            return None;
        }
    }
    Some(out)
}

#[inline]
pub(super) unsafe fn number(env: sys::napi_env, x: f64) -> sys::napi_value {
    let mut out = ptr::null_mut();
    sys::napi_create_double(env, x, &mut out);
    out
}
