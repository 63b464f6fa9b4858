// Covers: scf.index_switch with 5 cases + default -> vm.br_table (negative and out-of-range index go to default).
func.func @dispatch_switch(%sel: i32, %a: i32, %b: i32) -> i32 {
  %idx = arith.index_cast %sel : i32 to index
  %r = scf.index_switch %idx -> i32
  case 0 {
    %v = arith.addi %a, %b : i32
    scf.yield %v : i32
  }
  case 1 {
    %v = arith.subi %a, %b : i32
    scf.yield %v : i32
  }
  case 2 {
    %v = arith.muli %a, %b : i32
    scf.yield %v : i32
  }
  case 3 {
    %v = arith.xori %a, %b : i32
    scf.yield %v : i32
  }
  case 4 {
    %v = arith.maxsi %a, %b : i32
    scf.yield %v : i32
  }
  default {
    %c = arith.constant -7 : i32
    scf.yield %c : i32
  }
  return %r : i32
}

// A sparse switch (case values not starting at 0) on i64 values.
func.func @sparse_switch(%sel: i32, %x: i64) -> i64 {
  %idx = arith.index_cast %sel : i32 to index
  %r = scf.index_switch %idx -> i64
  case 2 {
    %v = arith.addi %x, %x : i64
    scf.yield %v : i64
  }
  case 5 {
    %v = arith.muli %x, %x : i64
    scf.yield %v : i64
  }
  case 7 {
    %c = arith.constant 1000000000000 : i64
    %v = arith.addi %x, %c : i64
    scf.yield %v : i64
  }
  default {
    scf.yield %x : i64
  }
  return %r : i64
}
