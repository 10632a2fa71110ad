pub fn y(){}
