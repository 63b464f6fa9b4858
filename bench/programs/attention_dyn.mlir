// 4 stacked single-head attention blocks over a dynamic sequence length:
// per block q, k, v = x Wq, x Wk, x Wv; p = softmax(q k^T / 8); x = (p v) Wo.
// Shapes depend on the token count, so IREE records command buffers per call.
// Weights live in a mutable global that `setup` fills once.
// (Written by: python3 -c 'from bench.programs import attention_source; ...'.)
util.global private mutable @w : tensor<4x4x64x64xf32>

func.func @setup(%w: tensor<4x4x64x64xf32>) {
  util.global.store %w, @w : tensor<4x4x64x64xf32>
  return
}

func.func @main(%x: tensor<?x64xf32>) -> tensor<?x64xf32> {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %scale = arith.constant 0.125 : f32
  %w = util.global.load @w : tensor<4x4x64x64xf32>
  %n = tensor.dim %x, %c0 : tensor<?x64xf32>
  %ed = tensor.empty(%n) : tensor<?x64xf32>
  %fd = linalg.fill ins(%zero : f32) outs(%ed : tensor<?x64xf32>) -> tensor<?x64xf32>
  %es = tensor.empty(%n, %n) : tensor<?x?xf32>
  %fs = linalg.fill ins(%zero : f32) outs(%es : tensor<?x?xf32>) -> tensor<?x?xf32>
  %w0q = tensor.extract_slice %w[0, 0, 0, 0] [1, 1, 64, 64] [1, 1, 1, 1] : tensor<4x4x64x64xf32> to tensor<64x64xf32>
  %q0 = linalg.matmul ins(%x, %w0q : tensor<?x64xf32>, tensor<64x64xf32>) outs(%fd : tensor<?x64xf32>) -> tensor<?x64xf32>
  %w0k = tensor.extract_slice %w[0, 1, 0, 0] [1, 1, 64, 64] [1, 1, 1, 1] : tensor<4x4x64x64xf32> to tensor<64x64xf32>
  %k0 = linalg.matmul ins(%x, %w0k : tensor<?x64xf32>, tensor<64x64xf32>) outs(%fd : tensor<?x64xf32>) -> tensor<?x64xf32>
  %w0v = tensor.extract_slice %w[0, 2, 0, 0] [1, 1, 64, 64] [1, 1, 1, 1] : tensor<4x4x64x64xf32> to tensor<64x64xf32>
  %v0 = linalg.matmul ins(%x, %w0v : tensor<?x64xf32>, tensor<64x64xf32>) outs(%fd : tensor<?x64xf32>) -> tensor<?x64xf32>
  %s0 = linalg.generic {indexing_maps = [affine_map<(i, j, c) -> (i, c)>, affine_map<(i, j, c) -> (j, c)>, affine_map<(i, j, c) -> (i, j)>],
      iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%q0, %k0 : tensor<?x64xf32>, tensor<?x64xf32>) outs(%fs : tensor<?x?xf32>) {
  ^bb0(%a: f32, %bb: f32, %acc: f32):
    %m = arith.mulf %a, %bb : f32
    %sc = arith.mulf %m, %scale : f32
    %r = arith.addf %acc, %sc : f32
    linalg.yield %r : f32
  } -> tensor<?x?xf32>
  %p0 = linalg.softmax dimension(1) ins(%s0 : tensor<?x?xf32>) outs(%es : tensor<?x?xf32>) -> tensor<?x?xf32>
  %a0 = linalg.matmul ins(%p0, %v0 : tensor<?x?xf32>, tensor<?x64xf32>) outs(%fd : tensor<?x64xf32>) -> tensor<?x64xf32>
  %w0o = tensor.extract_slice %w[0, 3, 0, 0] [1, 1, 64, 64] [1, 1, 1, 1] : tensor<4x4x64x64xf32> to tensor<64x64xf32>
  %o0 = linalg.matmul ins(%a0, %w0o : tensor<?x64xf32>, tensor<64x64xf32>) outs(%fd : tensor<?x64xf32>) -> tensor<?x64xf32>
  %w1q = tensor.extract_slice %w[1, 0, 0, 0] [1, 1, 64, 64] [1, 1, 1, 1] : tensor<4x4x64x64xf32> to tensor<64x64xf32>
  %q1 = linalg.matmul ins(%o0, %w1q : tensor<?x64xf32>, tensor<64x64xf32>) outs(%fd : tensor<?x64xf32>) -> tensor<?x64xf32>
  %w1k = tensor.extract_slice %w[1, 1, 0, 0] [1, 1, 64, 64] [1, 1, 1, 1] : tensor<4x4x64x64xf32> to tensor<64x64xf32>
  %k1 = linalg.matmul ins(%o0, %w1k : tensor<?x64xf32>, tensor<64x64xf32>) outs(%fd : tensor<?x64xf32>) -> tensor<?x64xf32>
  %w1v = tensor.extract_slice %w[1, 2, 0, 0] [1, 1, 64, 64] [1, 1, 1, 1] : tensor<4x4x64x64xf32> to tensor<64x64xf32>
  %v1 = linalg.matmul ins(%o0, %w1v : tensor<?x64xf32>, tensor<64x64xf32>) outs(%fd : tensor<?x64xf32>) -> tensor<?x64xf32>
  %s1 = linalg.generic {indexing_maps = [affine_map<(i, j, c) -> (i, c)>, affine_map<(i, j, c) -> (j, c)>, affine_map<(i, j, c) -> (i, j)>],
      iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%q1, %k1 : tensor<?x64xf32>, tensor<?x64xf32>) outs(%fs : tensor<?x?xf32>) {
  ^bb0(%a: f32, %bb: f32, %acc: f32):
    %m = arith.mulf %a, %bb : f32
    %sc = arith.mulf %m, %scale : f32
    %r = arith.addf %acc, %sc : f32
    linalg.yield %r : f32
  } -> tensor<?x?xf32>
  %p1 = linalg.softmax dimension(1) ins(%s1 : tensor<?x?xf32>) outs(%es : tensor<?x?xf32>) -> tensor<?x?xf32>
  %a1 = linalg.matmul ins(%p1, %v1 : tensor<?x?xf32>, tensor<?x64xf32>) outs(%fd : tensor<?x64xf32>) -> tensor<?x64xf32>
  %w1o = tensor.extract_slice %w[1, 3, 0, 0] [1, 1, 64, 64] [1, 1, 1, 1] : tensor<4x4x64x64xf32> to tensor<64x64xf32>
  %o1 = linalg.matmul ins(%a1, %w1o : tensor<?x64xf32>, tensor<64x64xf32>) outs(%fd : tensor<?x64xf32>) -> tensor<?x64xf32>
  %w2q = tensor.extract_slice %w[2, 0, 0, 0] [1, 1, 64, 64] [1, 1, 1, 1] : tensor<4x4x64x64xf32> to tensor<64x64xf32>
  %q2 = linalg.matmul ins(%o1, %w2q : tensor<?x64xf32>, tensor<64x64xf32>) outs(%fd : tensor<?x64xf32>) -> tensor<?x64xf32>
  %w2k = tensor.extract_slice %w[2, 1, 0, 0] [1, 1, 64, 64] [1, 1, 1, 1] : tensor<4x4x64x64xf32> to tensor<64x64xf32>
  %k2 = linalg.matmul ins(%o1, %w2k : tensor<?x64xf32>, tensor<64x64xf32>) outs(%fd : tensor<?x64xf32>) -> tensor<?x64xf32>
  %w2v = tensor.extract_slice %w[2, 2, 0, 0] [1, 1, 64, 64] [1, 1, 1, 1] : tensor<4x4x64x64xf32> to tensor<64x64xf32>
  %v2 = linalg.matmul ins(%o1, %w2v : tensor<?x64xf32>, tensor<64x64xf32>) outs(%fd : tensor<?x64xf32>) -> tensor<?x64xf32>
  %s2 = linalg.generic {indexing_maps = [affine_map<(i, j, c) -> (i, c)>, affine_map<(i, j, c) -> (j, c)>, affine_map<(i, j, c) -> (i, j)>],
      iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%q2, %k2 : tensor<?x64xf32>, tensor<?x64xf32>) outs(%fs : tensor<?x?xf32>) {
  ^bb0(%a: f32, %bb: f32, %acc: f32):
    %m = arith.mulf %a, %bb : f32
    %sc = arith.mulf %m, %scale : f32
    %r = arith.addf %acc, %sc : f32
    linalg.yield %r : f32
  } -> tensor<?x?xf32>
  %p2 = linalg.softmax dimension(1) ins(%s2 : tensor<?x?xf32>) outs(%es : tensor<?x?xf32>) -> tensor<?x?xf32>
  %a2 = linalg.matmul ins(%p2, %v2 : tensor<?x?xf32>, tensor<?x64xf32>) outs(%fd : tensor<?x64xf32>) -> tensor<?x64xf32>
  %w2o = tensor.extract_slice %w[2, 3, 0, 0] [1, 1, 64, 64] [1, 1, 1, 1] : tensor<4x4x64x64xf32> to tensor<64x64xf32>
  %o2 = linalg.matmul ins(%a2, %w2o : tensor<?x64xf32>, tensor<64x64xf32>) outs(%fd : tensor<?x64xf32>) -> tensor<?x64xf32>
  %w3q = tensor.extract_slice %w[3, 0, 0, 0] [1, 1, 64, 64] [1, 1, 1, 1] : tensor<4x4x64x64xf32> to tensor<64x64xf32>
  %q3 = linalg.matmul ins(%o2, %w3q : tensor<?x64xf32>, tensor<64x64xf32>) outs(%fd : tensor<?x64xf32>) -> tensor<?x64xf32>
  %w3k = tensor.extract_slice %w[3, 1, 0, 0] [1, 1, 64, 64] [1, 1, 1, 1] : tensor<4x4x64x64xf32> to tensor<64x64xf32>
  %k3 = linalg.matmul ins(%o2, %w3k : tensor<?x64xf32>, tensor<64x64xf32>) outs(%fd : tensor<?x64xf32>) -> tensor<?x64xf32>
  %w3v = tensor.extract_slice %w[3, 2, 0, 0] [1, 1, 64, 64] [1, 1, 1, 1] : tensor<4x4x64x64xf32> to tensor<64x64xf32>
  %v3 = linalg.matmul ins(%o2, %w3v : tensor<?x64xf32>, tensor<64x64xf32>) outs(%fd : tensor<?x64xf32>) -> tensor<?x64xf32>
  %s3 = linalg.generic {indexing_maps = [affine_map<(i, j, c) -> (i, c)>, affine_map<(i, j, c) -> (j, c)>, affine_map<(i, j, c) -> (i, j)>],
      iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%q3, %k3 : tensor<?x64xf32>, tensor<?x64xf32>) outs(%fs : tensor<?x?xf32>) {
  ^bb0(%a: f32, %bb: f32, %acc: f32):
    %m = arith.mulf %a, %bb : f32
    %sc = arith.mulf %m, %scale : f32
    %r = arith.addf %acc, %sc : f32
    linalg.yield %r : f32
  } -> tensor<?x?xf32>
  %p3 = linalg.softmax dimension(1) ins(%s3 : tensor<?x?xf32>) outs(%es : tensor<?x?xf32>) -> tensor<?x?xf32>
  %a3 = linalg.matmul ins(%p3, %v3 : tensor<?x?xf32>, tensor<?x64xf32>) outs(%fd : tensor<?x64xf32>) -> tensor<?x64xf32>
  %w3o = tensor.extract_slice %w[3, 3, 0, 0] [1, 1, 64, 64] [1, 1, 1, 1] : tensor<4x4x64x64xf32> to tensor<64x64xf32>
  %o3 = linalg.matmul ins(%a3, %w3o : tensor<?x64xf32>, tensor<64x64xf32>) outs(%fd : tensor<?x64xf32>) -> tensor<?x64xf32>
  return %o3 : tensor<?x64xf32>
}
