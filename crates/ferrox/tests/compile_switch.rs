//! `disable_compile` / `enable_compile`: a process-wide switch, so it is
//! tested in its own binary — flipping it beside other compile tests would
//! make their cache counts race with it.

use ferrox::transforms::compile::compile;
use ferrox::{ops, Dtype, Result};

#[test]
fn disabled_compile_calls_the_function_and_enabled_traces_again() -> Result<()> {
    let f = compile(|xs| Ok(vec![ops::exp(&xs[0])?]), false);
    let x = ops::random::normal(&[2], Dtype::F32, None, None, Some(&ops::random::key(13)?))?;
    ferrox::disable_compile();
    assert!(!ferrox::transforms::compile::is_compile_enabled());
    let out = f.call(std::slice::from_ref(&x));
    ferrox::enable_compile();
    assert_eq!(out?[0].to_vec::<f32>()?, ops::exp(&x)?.to_vec::<f32>()?);
    assert_eq!(f.stats().misses, 0);
    f.call(std::slice::from_ref(&x))?;
    assert_eq!(f.stats().misses, 1);
    Ok(())
}
