//! The cuDNN functions ferrox calls, bound from the copy `libraries.rs`
//! opened (`bind.rs` says why: with a system cuDNN beside the pip wheel's,
//! cudarc's loader mixed copies and cuDNN refused every descriptor with
//! `CUDNN_STATUS_SUBLIBRARY_VERSION_MISMATCH`).

use super::bind::bound_functions;
use super::libraries::{self, CudaLibrary};
use cudarc::cudnn::sys::*;
use std::ffi::{c_int, c_void};
use std::sync::OnceLock;

bound_functions! {
    /// cuDNN's functions, each bound from the loaded library.
    Api -> cudnnStatus_t {
        cudnnCreate(handle: *mut cudnnHandle_t);
        cudnnSetStream(handle: cudnnHandle_t, stream_id: cudaStream_t);
        cudnnCreateTensorDescriptor(tensor_desc: *mut cudnnTensorDescriptor_t);
        cudnnDestroyTensorDescriptor(tensor_desc: cudnnTensorDescriptor_t);
        cudnnSetTensorNdDescriptorEx(tensor_desc: cudnnTensorDescriptor_t, format: cudnnTensorFormat_t, data_type: cudnnDataType_t, nb_dims: c_int, dim_a: *const c_int);
        cudnnCreateFilterDescriptor(filter_desc: *mut cudnnFilterDescriptor_t);
        cudnnDestroyFilterDescriptor(filter_desc: cudnnFilterDescriptor_t);
        cudnnSetFilterNdDescriptor(filter_desc: cudnnFilterDescriptor_t, data_type: cudnnDataType_t, format: cudnnTensorFormat_t, nb_dims: c_int, filter_dim_a: *const c_int);
        cudnnCreateConvolutionDescriptor(conv_desc: *mut cudnnConvolutionDescriptor_t);
        cudnnDestroyConvolutionDescriptor(conv_desc: cudnnConvolutionDescriptor_t);
        cudnnSetConvolutionNdDescriptor(conv_desc: cudnnConvolutionDescriptor_t, array_length: c_int, pad_a: *const c_int, filter_stride_a: *const c_int, dilation_a: *const c_int, mode: cudnnConvolutionMode_t, compute_type: cudnnDataType_t);
        cudnnSetConvolutionGroupCount(conv_desc: cudnnConvolutionDescriptor_t, group_count: c_int);
        cudnnSetConvolutionMathType(conv_desc: cudnnConvolutionDescriptor_t, math_type: cudnnMathType_t);
        cudnnFindConvolutionForwardAlgorithmEx(handle: cudnnHandle_t, x_desc: cudnnTensorDescriptor_t, x: *const c_void, w_desc: cudnnFilterDescriptor_t, w: *const c_void, conv_desc: cudnnConvolutionDescriptor_t, y_desc: cudnnTensorDescriptor_t, y: *mut c_void, requested_algo_count: c_int, returned_algo_count: *mut c_int, perf_results: *mut cudnnConvolutionFwdAlgoPerf_t, work_space: *mut c_void, work_space_size_in_bytes: usize);
        cudnnFindConvolutionBackwardDataAlgorithmEx(handle: cudnnHandle_t, w_desc: cudnnFilterDescriptor_t, w: *const c_void, dy_desc: cudnnTensorDescriptor_t, dy: *const c_void, conv_desc: cudnnConvolutionDescriptor_t, dx_desc: cudnnTensorDescriptor_t, dx: *mut c_void, requested_algo_count: c_int, returned_algo_count: *mut c_int, perf_results: *mut cudnnConvolutionBwdDataAlgoPerf_t, work_space: *mut c_void, work_space_size_in_bytes: usize);
        cudnnFindConvolutionBackwardFilterAlgorithmEx(handle: cudnnHandle_t, x_desc: cudnnTensorDescriptor_t, x: *const c_void, dy_desc: cudnnTensorDescriptor_t, y: *const c_void, conv_desc: cudnnConvolutionDescriptor_t, dw_desc: cudnnFilterDescriptor_t, dw: *mut c_void, requested_algo_count: c_int, returned_algo_count: *mut c_int, perf_results: *mut cudnnConvolutionBwdFilterAlgoPerf_t, work_space: *mut c_void, work_space_size_in_bytes: usize);
        cudnnConvolutionForward(handle: cudnnHandle_t, alpha: *const c_void, x_desc: cudnnTensorDescriptor_t, x: *const c_void, w_desc: cudnnFilterDescriptor_t, w: *const c_void, conv_desc: cudnnConvolutionDescriptor_t, algo: cudnnConvolutionFwdAlgo_t, work_space: *mut c_void, work_space_size_in_bytes: usize, beta: *const c_void, y_desc: cudnnTensorDescriptor_t, y: *mut c_void);
        cudnnConvolutionBackwardData(handle: cudnnHandle_t, alpha: *const c_void, w_desc: cudnnFilterDescriptor_t, w: *const c_void, dy_desc: cudnnTensorDescriptor_t, dy: *const c_void, conv_desc: cudnnConvolutionDescriptor_t, algo: cudnnConvolutionBwdDataAlgo_t, work_space: *mut c_void, work_space_size_in_bytes: usize, beta: *const c_void, dx_desc: cudnnTensorDescriptor_t, dx: *mut c_void);
        cudnnConvolutionBackwardFilter(handle: cudnnHandle_t, alpha: *const c_void, x_desc: cudnnTensorDescriptor_t, x: *const c_void, dy_desc: cudnnTensorDescriptor_t, dy: *const c_void, conv_desc: cudnnConvolutionDescriptor_t, algo: cudnnConvolutionBwdFilterAlgo_t, work_space: *mut c_void, work_space_size_in_bytes: usize, beta: *const c_void, dw_desc: cudnnFilterDescriptor_t, dw: *mut c_void);
    }
}

/// The bound functions, or why cuDNN cannot be used (missing, or lacking a
/// function); bound once.
pub(crate) fn api() -> Result<&'static Api, String> {
    static API: OnceLock<Result<Api, String>> = OnceLock::new();
    API.get_or_init(|| libraries::load(CudaLibrary::Cudnn).and_then(Api::bind)).as_ref().map_err(Clone::clone)
}
