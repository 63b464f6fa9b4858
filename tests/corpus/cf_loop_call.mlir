// Covers: a host loop whose test reads a value back, run as a loop call
// (`queue_n.loop(...)`, docs/design/host-path.md §18): a token walk. Each iteration's
// dispatch indexes a table with the token the last one read back (a dispatch constant);
// the loop stops on token 0 or after n steps (n and the start masked to stay small).
func.func @walk(%tab: tensor<8xi32>, %start: tensor<i32>, %n: tensor<i32>) -> tensor<i32> {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %c7 = arith.constant 7 : i32
  %c31 = arith.constant 31 : i32
  %c100 = arith.constant 100 : i32
  %s = tensor.extract %start[] : tensor<i32>
  %t0 = arith.andi %s, %c7 : i32
  %m = tensor.extract %n[] : tensor<i32>
  %n0 = arith.andi %m, %c31 : i32
  %r:2 = scf.while (%i = %c0, %tok = %t0) : (i32, i32) -> (i32, i32) {
    %more = arith.cmpi slt, %i, %n0 : i32
    %alive = arith.cmpi ne, %tok, %c0 : i32
    %go = arith.andi %more, %alive : i1
    scf.condition(%go) %i, %tok : i32, i32
  } do {
  ^bb0(%i: i32, %tok: i32):
    %row = arith.index_cast %tok : i32 to index
    %x = tensor.extract_slice %tab[%row] [1] [1] : tensor<8xi32> to tensor<1xi32>
    %e = tensor.empty() : tensor<1xi32>
    %y = linalg.generic {indexing_maps = [affine_map<(d) -> (d)>, affine_map<(d) -> (d)>],
                         iterator_types = ["parallel"]}
        ins(%x : tensor<1xi32>) outs(%e : tensor<1xi32>) {
    ^bb0(%a: i32, %b: i32):
      %p = arith.addi %a, %c1 : i32
      %u = arith.remui %p, %c7 : i32
      linalg.yield %u : i32
    } -> tensor<1xi32>
    %k0 = arith.constant 0 : index
    %next = tensor.extract %y[%k0] : tensor<1xi32>
    %i1 = arith.addi %i, %c1 : i32
    scf.yield %i1, %next : i32, i32
  }
  %hundreds = arith.muli %r#0, %c100 : i32
  %sum = arith.addi %hundreds, %r#1 : i32
  %res = tensor.from_elements %sum : tensor<i32>
  return %res : tensor<i32>
}
