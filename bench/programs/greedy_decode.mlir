// Greedy decoding: 16 steps of (embedding row of the current token, 64x256 matmul to logits,
// argmax), the argmax read back to the host (tensor.extract) to index the embedding in the
// next step; stops early on token 0 (an end token). Returns the generated tokens (-1 after
// an early stop). Embedding and output weights live in mutable globals `setup` fills once.
util.global private mutable @emb : tensor<256x64xf32>
util.global private mutable @wout : tensor<64x256xf32>

func.func @setup(%emb: tensor<256x64xf32>, %wout: tensor<64x256xf32>) {
  util.global.store %emb, @emb : tensor<256x64xf32>
  util.global.store %wout, @wout : tensor<64x256xf32>
  return
}

func.func @main(%start: tensor<i32>) -> tensor<16xi32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %steps = arith.constant 16 : index
  %end = arith.constant 0 : i32
  %none = arith.constant -1 : i32
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %emb = util.global.load @emb : tensor<256x64xf32>
  %wout = util.global.load @wout : tensor<64x256xf32>
  %t0 = tensor.extract %start[] : tensor<i32>
  %e0 = tensor.empty() : tensor<16xi32>
  %out0 = linalg.fill ins(%none : i32) outs(%e0 : tensor<16xi32>) -> tensor<16xi32>
  %r:3 = scf.while (%i = %c0, %tok = %t0, %out = %out0)
      : (index, i32, tensor<16xi32>) -> (index, i32, tensor<16xi32>) {
    %more = arith.cmpi slt, %i, %steps : index
    %alive = arith.cmpi ne, %tok, %end : i32
    %go = arith.andi %more, %alive : i1
    scf.condition(%go) %i, %tok, %out : index, i32, tensor<16xi32>
  } do {
  ^bb0(%i: index, %tok: i32, %out: tensor<16xi32>):
    %row = arith.index_cast %tok : i32 to index
    %x = tensor.extract_slice %emb[%row, 0] [1, 64] [1, 1] : tensor<256x64xf32> to tensor<1x64xf32>
    %le = tensor.empty() : tensor<1x256xf32>
    %lf = linalg.fill ins(%zero : f32) outs(%le : tensor<1x256xf32>) -> tensor<1x256xf32>
    %logits = linalg.matmul ins(%x, %wout : tensor<1x64xf32>, tensor<64x256xf32>)
                            outs(%lf : tensor<1x256xf32>) -> tensor<1x256xf32>
    %me = tensor.empty() : tensor<1xf32>
    %mf = linalg.fill ins(%ninf : f32) outs(%me : tensor<1xf32>) -> tensor<1xf32>
    %ie = tensor.empty() : tensor<1xi32>
    %if = linalg.fill ins(%none : i32) outs(%ie : tensor<1xi32>) -> tensor<1xi32>
    %am:2 = linalg.generic {indexing_maps = [affine_map<(b, v) -> (b, v)>,
                                             affine_map<(b, v) -> (b)>,
                                             affine_map<(b, v) -> (b)>],
                            iterator_types = ["parallel", "reduction"]}
        ins(%logits : tensor<1x256xf32>) outs(%mf, %if : tensor<1xf32>, tensor<1xi32>) {
    ^bb0(%v: f32, %m: f32, %k: i32):
      %j = linalg.index 1 : index
      %ji = arith.index_cast %j : index to i32
      %gt = arith.cmpf ogt, %v, %m : f32
      %nm = arith.select %gt, %v, %m : f32
      %nk = arith.select %gt, %ji, %k : i32
      linalg.yield %nm, %nk : f32, i32
    } -> (tensor<1xf32>, tensor<1xi32>)
    %next = tensor.extract %am#1[%c0] : tensor<1xi32>
    %out1 = tensor.insert %next into %out[%i] : tensor<16xi32>
    %i1 = arith.addi %i, %c1 : index
    scf.yield %i1, %next, %out1 : index, i32, tensor<16xi32>
  }
  return %r#2 : tensor<16xi32>
}
